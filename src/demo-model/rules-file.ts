/**
 * A demo model rules file read from disk (the demo model's command line, and the API's suggestions
 * when `npm start` runs the demo model), and the sentences it offers users to try.
 */
import { readFileSync } from 'node:fs';
import { jsonErrorPosition } from '../shared/issues';
import { DemoRulesError, parseDemoRules, type ResolvedDemoRules } from './rules';

/** A rules file that cannot be used; the message names the file (and field, if any). */
export class UsageError extends Error {}

/** Reads and validates a rules file; every failure message names the file (and field, if any). */
export function loadRulesFile(file: string): ResolvedDemoRules {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read rules file ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`rules file ${file} is not valid JSON${jsonErrorPosition(text, err)}`);
  }
  try {
    return parseDemoRules(json);
  } catch (err) {
    if (err instanceof DemoRulesError) {
      throw new UsageError(`rules file ${file} is invalid:\n  ${err.issues.join('\n  ')}`);
    }
    throw err;
  }
}

/** The messages the rules answer, for users to try: each script's `example` (checked against its match), in file order. */
export function demoSuggestions(rules: ResolvedDemoRules): string[] {
  return rules.scripts.flatMap((s) => (s.example === undefined ? [] : [s.example]));
}
