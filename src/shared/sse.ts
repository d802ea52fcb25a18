/**
 * Reading server-sent events (the API's /v1/turns/:id/events): the one parser for the CLI chat, the
 * tests and the bench. Pure: the caller owns the byte stream.
 */
export interface SseEvent {
  id?: string;
  event: string;
  data: Record<string, unknown>;
}

/** One SSE event block (the text between blank lines); comments and data-less blocks give undefined. */
export function parseSseBlock(block: string): SseEvent | undefined {
  let id: string | undefined;
  let event = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':') || line === '') continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') id = value;
    else if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  if (data.length === 0) return undefined;
  return { ...(id !== undefined ? { id } : {}), event, data: JSON.parse(data.join('\n')) as Record<string, unknown> };
}

/** The complete blocks in `buffer` and what is left of it (the start of the next block). */
export function takeSseBlocks(buffer: string): { blocks: string[]; rest: string } {
  const blocks: string[] = [];
  let rest = buffer;
  let idx: number;
  while ((idx = rest.indexOf('\n\n')) >= 0) {
    blocks.push(rest.slice(0, idx));
    rest = rest.slice(idx + 2);
  }
  return { blocks, rest };
}

/** The events of an SSE byte stream (e.g. a fetch response body), in order, until it ends. */
export async function* sseEvents(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of chunks) {
    const taken = takeSseBlocks(buffer + decoder.decode(chunk, { stream: true }));
    buffer = taken.rest;
    for (const block of taken.blocks) {
      const event = parseSseBlock(block);
      if (event) yield event;
    }
  }
}
