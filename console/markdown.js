// Answers as Markdown (marked), sanitized (DOMPurify): raw HTML from the model is shown as text, never
// run, and whatever the renderer makes is sanitized again. JSON (tool results) is shown folded and pretty.
import { useMemo } from 'preact/hooks';
import { Marked } from 'marked';
import DOMPurify from 'dompurify';
import { html } from './lib.js';

const escapeHtml = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

// HTML in the text (a block or inline) is the model's: rendered as the characters it wrote.
const marked = new Marked({ gfm: true, breaks: true, async: false, renderer: { html: ({ text }) => escapeHtml(text) } });

// Links open in a new tab that cannot reach this one.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

/** Safe HTML for `text` read as Markdown. */
export function markdownHtml(text) {
  // Trimmed: the renderer ends blocks with a newline, which would be text of the answer.
  return DOMPurify.sanitize(marked.parse(String(text ?? '')).trim(), { USE_PROFILES: { html: true } });
}

export function Markdown({ text, className = '' }) {
  const safe = useMemo(() => markdownHtml(text), [text]);
  return html`<div class=${`markdown ${className}`} dangerouslySetInnerHTML=${{ __html: safe }}></div>`;
}

/** The value of `text` when it is a JSON object or array, else undefined. */
export function jsonOf(text) {
  const t = String(text ?? '').trim();
  if (!/^[[{]/.test(t)) return undefined;
  try {
    return JSON.parse(t);
  } catch {
    return undefined;
  }
}

/** A tool's result: JSON folded and pretty (with its size in the summary), anything else as text. */
export function ResultView({ text }) {
  const value = jsonOf(text);
  if (value === undefined) return html`<details class="result"><summary>result</summary><pre>${String(text)}</pre></details>`;
  const size = Array.isArray(value) ? `${value.length} item${value.length === 1 ? '' : 's'}` : `${Object.keys(value).length} field${Object.keys(value).length === 1 ? '' : 's'}`;
  return html`<details class="result json"><summary>result <span class="muted">(JSON, ${size})</span></summary><pre>${JSON.stringify(value, null, 2)}</pre></details>`;
}
