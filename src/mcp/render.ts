/**
 * MCP content as text for the LLM: text verbatim, everything else (images, audio, binary resources,
 * links) as a short placeholder that says what was there without pasting base64 into the prompt.
 */
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ToolOutcome } from '../shared/tool-types';
import { truncateWithin } from '../core/host-loop';

type ContentItem = Record<string, unknown>;

function base64Note(data: unknown): string {
  return typeof data === 'string' ? `${data.length} bytes base64` : 'no data';
}

export function renderContent(items: readonly unknown[]): string {
  const parts: string[] = [];
  for (const raw of items) {
    if (typeof raw !== 'object' || raw === null) continue;
    const item = raw as ContentItem;
    switch (item['type']) {
      case 'text':
        parts.push(typeof item['text'] === 'string' ? item['text'] : '');
        break;
      case 'image':
      case 'audio':
        parts.push(`[${String(item['type'])} ${String(item['mimeType'] ?? 'unknown type')}, ${base64Note(item['data'])}]`);
        break;
      case 'resource_link':
        parts.push(`[resource ${String(item['uri'])}]`);
        break;
      case 'resource':
        parts.push(renderResourceContents((item['resource'] ?? {}) as ContentItem));
        break;
      default:
        parts.push(`[${String(item['type'] ?? 'unknown')} content]`);
    }
  }
  return parts.join('\n');
}

/** One item of a `resources/read` result (or an embedded resource). */
export function renderResourceContents(resource: ContentItem): string {
  const uri = String(resource['uri'] ?? '');
  if (typeof resource['text'] === 'string') return resource['text'];
  const mime = typeof resource['mimeType'] === 'string' ? `${resource['mimeType']}, ` : '';
  return `[resource ${uri}, ${mime}${base64Note(resource['blob'])}]`;
}

/** A `tools/call` result as the turn records it; undefined when the result is malformed. */
export function toToolOutcome(raw: unknown): ToolOutcome | undefined {
  const parsed = CallToolResultSchema.safeParse(raw);
  if (!parsed.success) return undefined;
  const result = parsed.data;
  const structured = result.structuredContent;
  let text = renderContent(result.content);
  if (text === '' && structured !== undefined) text = JSON.stringify(structured);
  return {
    isError: result.isError === true,
    text,
    ...(structured !== undefined ? { structuredContent: structured } : {}),
  };
}

/** What the turn puts before an error's text when it hands it to the model (src/workflows/turn.ts). */
const ERROR_PREFIX = 'Error: ';

/**
 * A tool outcome as the activity returns it, into the turn's history: the text the model will see,
 * at most `maxChars` characters with the note that says how much was cut (counting the turn's
 * "Error: " prefix, so the turn's own cut to maxToolResultChars finds nothing left to cut), and the
 * structured content only when its JSON fits the same bound (nothing in the turn reads it; the text
 * renders it when the result has no text). A server answering 5 MiB costs the history maxChars.
 */
export function boundToolOutcome(outcome: ToolOutcome, maxChars: number): ToolOutcome {
  const limit = outcome.isError ? maxChars - ERROR_PREFIX.length : maxChars;
  const text = truncateWithin(outcome.text, Math.max(0, limit));
  const { structuredContent, ...rest } = outcome;
  const keepStructured = structuredContent !== undefined && JSON.stringify(structuredContent).length <= maxChars;
  return { ...rest, text, ...(keepStructured ? { structuredContent } : {}) };
}
