/**
 * Context on demand for the demo model (docs/decisions/0036): a script step that names a
 * `{{context:URI}}` the conversation does not hold, in a request that offers `host__read_resource`,
 * is preceded by rounds that fetch it: `host__list_resources` first (the model cannot know which server
 * holds a URI), then one read per missing URI the listing names. Those rounds do not advance the
 * script, and their results are not `{{result.N}}`. A URI the listing lacks (the caller may not read
 * it) or whose read was already tried is not asked for again: the step then renders as without it.
 * A script that calls those tools in its own steps is left as written.
 * Pure and deterministic, as the rest of the rule engine.
 */
import { parseTemplate, TEMPLATE, type DemoScript } from './rules-schema';

export const LIST_RESOURCES = 'host__list_resources';
export const READ_RESOURCE = 'host__read_resource';

/** Whether a script calls the host's resource tools in its own steps (then nothing is fetched on demand). */
export function callsResourceTools(script: DemoScript): boolean {
  return script.steps.some((s) => (s.toolCalls ?? []).some((c) => c.name === LIST_RESOURCES || c.name === READ_RESOURCE));
}

/** A round of the model that only fetched context (every call a host resource tool). */
export function isOnDemandRound(calls: ReadonlyArray<{ function: { name: string } }>): boolean {
  return calls.length > 0 && calls.every((c) => c.function.name === LIST_RESOURCES || c.function.name === READ_RESOURCE);
}

/** The URIs a step's templates read as context, in order of appearance, each once. */
export function contextUris(step: DemoScript['steps'][number]): string[] {
  const uris: string[] = [];
  for (const [, expr] of JSON.stringify(step).matchAll(TEMPLATE)) {
    const ref = parseTemplate(expr ?? '')?.ref;
    if (ref?.kind === 'context' && !uris.includes(ref.uri)) uris.push(ref.uri);
  }
  return uris;
}

/** The `uri` argument of a read call ('' when its arguments hold none). */
export function readUri(args: string | undefined): string {
  try {
    const uri = (JSON.parse(args ?? '') as { uri?: unknown } | null)?.uri;
    return typeof uri === 'string' ? uri : '';
  } catch {
    return '';
  }
}

/** The text of `uri` from a read's result in this turn: the host answers `<uri> from <server>:\n<text>`. */
export function readText(uri: string, reads: readonly string[]): string | undefined {
  const found = reads.find((r) => r.startsWith(`${uri} from `) && r.includes('\n'));
  return found === undefined ? undefined : found.slice(found.indexOf('\n') + 1);
}

/** The server a listing names for `uri` (its lines read `- <server> <uri>[: name]`). */
function serverOf(uri: string, listing: string): string | undefined {
  for (const line of listing.split('\n')) {
    const [dash, server, listed] = line.split(' ');
    if (dash === '-' && server && listed?.replace(/:$/, '') === uri) return server;
  }
  return undefined;
}

/**
 * The calls of the next fetching round, or an empty list when nothing is to be fetched. `missing`: the
 * step's context URIs the conversation does not hold; `tried`: URIs already read (or tried) this turn;
 * `listing`: this turn's listing, if the model asked for one.
 */
export function onDemandCalls(args: { missing: readonly string[]; tried: ReadonlySet<string>; offered: readonly string[]; listing: string | undefined; script: string }): Array<{ name: string; arguments: Record<string, unknown> }> {
  const wanted = args.missing.filter((uri) => !args.tried.has(uri));
  if (wanted.length === 0 || !args.offered.includes(READ_RESOURCE)) return [];
  if (args.listing === undefined) return args.offered.includes(LIST_RESOURCES) ? [{ name: LIST_RESOURCES, arguments: {} }] : [];
  const listing = args.listing;
  return wanted.flatMap((uri) => {
    const server = serverOf(uri, listing);
    return server === undefined ? [] : [{ name: READ_RESOURCE, arguments: { server, uri, reason: `script ${args.script} needs it` } }];
  });
}
