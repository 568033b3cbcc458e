// SPDX-License-Identifier: MIT
// HTML for the webviews: a query result as a table, a flame graph's SVG. Pure functions (no
// VS Code), each page with a Content-Security-Policy that allows only what it needs.
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c] as string));
}

const STYLE = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); }
table { border-collapse: collapse; font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); }
th, td { border: 1px solid var(--vscode-panel-border, #8884); padding: 2px 8px; text-align: left; vertical-align: top; white-space: pre; }
th { position: sticky; top: 0; background: var(--vscode-editor-background); }
.meta { opacity: 0.8; margin: 0.5em 0; }
.note { color: var(--vscode-editorWarning-foreground, #b80); }
`;

export interface QueryView {
  title: string;
  sql: string;
  columns: string[];
  rows: string[][];
  // What the CLI noted on stderr (a truncated result), if anything.
  notes: string[];
  elapsedMs: number;
}

export function queryHtml(v: QueryView): string {
  const head = v.columns.map((c) => `<th>${escapeHtml(c)}</th>`).join('');
  const body = v.rows.map((r) => `<tr>${v.columns.map((_, i) => `<td>${escapeHtml(r[i] ?? '')}</td>`).join('')}</tr>`).join('\n');
  const notes = v.notes.map((n) => `<div class="note">${escapeHtml(n)}</div>`).join('');
  return `<!DOCTYPE html>
<html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline';">
<title>${escapeHtml(v.title)}</title><style>${STYLE}</style></head>
<body>
<div class="meta"><code>${escapeHtml(v.sql)}</code></div>
<div class="meta">${v.rows.length} row${v.rows.length === 1 ? '' : 's'} · ${v.elapsedMs} ms</div>
${notes}
<table><thead><tr>${head}</tr></thead><tbody>
${body}
</tbody></table>
</body></html>`;
}

// The flame graph's SVG as its own document, in a frame: its script (zoom, search) works on the
// SVG as the root document, so it is not inlined into this HTML. A data: URL keeps it free of
// files and resource roots; the frame inherits this page's policy, which allows inline scripts
// and nothing from anywhere else. A note (the process was idle, sampled in wall-clock time)
// goes above the graph.
export function flameGraphHtml(title: string, svg: string, fragment = '', note: string | null = null): string {
  const root = /<svg\b[^>]*>/.exec(svg);
  const h = root ? /\sheight="(\d+(?:\.\d+)?)"/.exec(root[0]) : null;
  const height = h ? Math.ceil(Number(h[1])) + 8 : 600;
  const src = `data:image/svg+xml;base64,${Buffer.from(svg, 'utf8').toString('base64')}${fragment}`;
  return `<!DOCTYPE html>
<html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; frame-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline';">
<title>${escapeHtml(title)}</title><style>${STYLE} body { margin: 0; } iframe { border: 0; width: 100%; display: block; }</style></head>
<body>
${note ? `<div class="note" style="margin: 4px 8px">${escapeHtml(note)}</div>\n` : ''}<iframe title="${escapeHtml(title)}" style="height: ${height}px" src="${src}"></iframe>
</body></html>`;
}
