import { buildToolIndex, llmToolName, toolNameOf, type ToolRef } from '../../src/shared/tool-names';

const VALID = /^[a-zA-Z0-9_-]{1,64}$/;

/** Reference FNV-1a over UTF-8, written independently of the implementation under test. */
function referenceFnv1a(input: string): string {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(input, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [items.slice()];
  return items.flatMap((item, i) =>
    permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]),
  );
}

describe('llmToolName', () => {
  it('joins server and tool with a double underscore', () => {
    expect(llmToolName('notes', 'add_note')).toBe('notes__add_note');
    expect(llmToolName('everything', 'get-tiny-image')).toBe('everything__get-tiny-image');
  });

  it('replaces every character outside [a-zA-Z0-9_-] with an underscore', () => {
    expect(llmToolName('fs', 'read file/v2.1')).toBe('fs__read_file_v2_1');
    expect(llmToolName('fs', 'größe')).toBe('fs__gr__e');
    // One underscore per code point, not per UTF-16 unit.
    expect(llmToolName('x', 'a😀b')).toBe('x__a_b');
  });

  it('truncates long names to 64 characters with a hash of the original names', () => {
    const server = 'srv';
    const tool = `t${'x'.repeat(100)}`;
    const name = llmToolName(server, tool);
    expect(name).toHaveLength(64);
    expect(name).toMatch(VALID);
    expect(name).toBe(`${`srv__${tool}`.slice(0, 55)}_${referenceFnv1a(`${server}\u0000${tool}`)}`);
  });

  it('gives long names that differ only after the cut different names', () => {
    const a = llmToolName('srv', `${'y'.repeat(80)}a`);
    const b = llmToolName('srv', `${'y'.repeat(80)}b`);
    expect(a).not.toBe(b);
    expect(a.slice(0, 55)).toBe(b.slice(0, 55));
  });

  it('is stable: same input, same name (pinned value)', () => {
    const tool = 'a-really-long-tool-name-that-goes-on-and-on-and-on-beyond-the-limit';
    expect(llmToolName('notes', tool)).toBe(llmToolName('notes', tool));
    expect(llmToolName('notes', tool)).toBe(
      `${`notes__${tool}`.slice(0, 55)}_${referenceFnv1a(`notes\u0000${tool}`)}`,
    );
    // Pinned literal: fails if the hash or the layout ever changes, which would rename tools that
    // running workflows already refer to.
    expect(llmToolName('notes', tool)).toBe('notes__a-really-long-tool-name-that-goes-on-and-on-and-_4926cc72');
    expect(referenceFnv1a('a')).toBe('e40c292c');
  });

  it('always produces a valid name', () => {
    const samples: Array<[string, string]> = [
      ['a', ''],
      ['a', ' '],
      ['a'.repeat(32), '€'.repeat(200)],
      ['s', '\ud800'],
    ];
    for (const [server, tool] of samples) expect(llmToolName(server, tool)).toMatch(VALID);
  });
});

describe('buildToolIndex', () => {
  it('maps plain names to their originals', () => {
    const index = buildToolIndex([
      { server: 'notes', tool: 'add_note' },
      { server: 'notes', tool: 'list_notes' },
      { server: 'web', tool: 'add_note' },
    ]);
    expect([...index.keys()].sort()).toEqual(['notes__add_note', 'notes__list_notes', 'web__add_note']);
    expect(index.get('web__add_note')).toEqual({ server: 'web', tool: 'add_note' });
  });

  it('resolves names through the map, never by splitting (tools may contain "__")', () => {
    const index = buildToolIndex([{ server: 'a', tool: 'b__c' }]);
    expect(index.get('a__b__c')).toEqual({ server: 'a', tool: 'b__c' });
    expect(toolNameOf(index, 'a', 'b__c')).toBe('a__b__c');
    expect(toolNameOf(index, 'a', 'nope')).toBeUndefined();
  });

  it('gives every member of a collision a distinct hashed name', () => {
    const refs: ToolRef[] = [
      { server: 'fs', tool: 'read.file' },
      { server: 'fs', tool: 'read/file' },
      { server: 'fs', tool: 'read_file' },
      { server: 'fs', tool: 'write' },
    ];
    const index = buildToolIndex(refs);
    expect(index.size).toBe(4);
    for (const name of index.keys()) expect(name).toMatch(VALID);
    // The non-colliding tool keeps its plain name.
    expect(index.get('fs__write')).toEqual({ server: 'fs', tool: 'write' });
    // None of the colliding ones gets the plain name: which one would is an order accident.
    expect(index.has('fs__read_file')).toBe(false);
    for (const ref of refs.slice(0, 3)) {
      const name = toolNameOf(index, ref.server, ref.tool);
      expect(name).toBe(`fs__read_file_${referenceFnv1a(`${ref.server}\u0000${ref.tool}`)}`);
    }
  });

  it('is independent of input order', () => {
    const refs: ToolRef[] = [
      { server: 'fs', tool: 'read.file' },
      { server: 'fs', tool: 'read/file' },
      { server: 'fs_', tool: '_read_file' },
      { server: 'x', tool: 'y' },
    ];
    const expected = [...buildToolIndex(refs).entries()].sort(([a], [b]) => (a < b ? -1 : 1));
    for (const order of permutations(refs)) {
      const got = [...buildToolIndex(order).entries()].sort(([a], [b]) => (a < b ? -1 : 1));
      expect(got).toEqual(expected);
    }
  });

  it('merges duplicate entries', () => {
    const index = buildToolIndex([
      { server: 'a', tool: 'b' },
      { server: 'a', tool: 'b' },
    ]);
    expect([...index.entries()]).toEqual([['a__b', { server: 'a', tool: 'b' }]]);
  });

  it('handles collisions between long names too', () => {
    const long = 'z'.repeat(70);
    const refs: ToolRef[] = [
      { server: 's', tool: `${long}.` },
      { server: 's', tool: `${long}/` },
    ];
    const index = buildToolIndex(refs);
    expect(index.size).toBe(2);
    for (const [name, ref] of index) {
      expect(name).toHaveLength(64);
      expect(refs).toContainEqual(ref);
    }
  });
});
