/**
 * Context by intent (seed 000 §9.5, issue 28 §2; docs/decisions/0032): the host config's `intents` map
 * a message's words (a regular expression) to resources and prompts to gather, beside the role rules
 * (`contextByRole`, else `context`). Pure: the API chooses a turn's context with it; each piece keeps
 * why it was chosen, which the turn records in its events.
 */
import type { ContextSpec } from '../shared/turn';

export interface IntentRule extends ContextSpec {
  /** Named in the turn's events: why a piece of context was read. */
  name: string;
  /** A JavaScript regular expression tested against the user's message. */
  match: string;
  /** Its flags (from i, m, s, u); default `i`. */
  flags: string;
}

/** The flags an intent's pattern may use: no `g` or `y`, whose state would make `test` answer differently each time. */
export const INTENT_FLAGS = /^[imsu]*$/;

/**
 * The context of a turn: the role's (or the default) context, then the resources and prompts of every
 * intent whose pattern matches `text`, each once (the first reason wins). When an intent matched,
 * every piece says why it is there (`because`); otherwise the spec is the role's, unchanged.
 */
export function contextFor(args: { role: string; text: string; byRole: Readonly<Record<string, ContextSpec>>; base: ContextSpec; intents: readonly IntentRule[] }): ContextSpec {
  const own = Object.hasOwn(args.byRole, args.role) ? args.byRole[args.role] : undefined;
  const first = own ?? args.base;
  const matched = args.intents.filter((rule) => new RegExp(rule.match, rule.flags).test(args.text));
  if (matched.length === 0) return first;
  const why = own ? `role ${args.role}` : 'default context';
  const spec: ContextSpec = { resources: [], prompts: [] };
  const add = (from: ContextSpec, because: string) => {
    for (const r of from.resources) {
      if (!spec.resources.some((x) => x.server === r.server && x.uri === r.uri)) spec.resources.push({ server: r.server, uri: r.uri, because });
    }
    for (const p of from.prompts) {
      if (!spec.prompts.some((x) => x.server === p.server && x.name === p.name)) spec.prompts.push({ ...p, because });
    }
  };
  add(first, why);
  for (const rule of matched) add(rule, `intent ${rule.name}`);
  return spec;
}

/** Why each piece of a turn's context was read, when its spec says (see contextFor); else nothing. */
export function contextReasons(spec: ContextSpec): Array<{ kind: 'resource' | 'prompt'; server: string; ref: string; because: string }> {
  return [
    ...spec.resources.flatMap((r) => (r.because ? [{ kind: 'resource' as const, server: r.server, ref: r.uri, because: r.because }] : [])),
    ...spec.prompts.flatMap((p) => (p.because ? [{ kind: 'prompt' as const, server: p.server, ref: p.name, because: p.because }] : [])),
  ];
}
