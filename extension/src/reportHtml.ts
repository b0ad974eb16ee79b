// The report view's page: the server's self-contained HTML report (or the markdown report, rendered), locked
// down by a content security policy. No `vscode` import: unit-tested in Node.

export function contentSecurityPolicy(cspSource: string): string {
  return `default-src 'none'; style-src 'unsafe-inline' ${cspSource}; img-src data: ${cspSource}; font-src ${cspSource};`;
}

/** The HTML report with the policy as the first thing in its head (scripts stay off in the webview anyway). */
export function withPolicy(html: string, cspSource: string): string {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy(cspSource)}">`;
  const head = /<head[^>]*>/i.exec(html);
  if (head) {
    const at = head.index + head[0].length;
    return `${html.slice(0, at)}\n${meta}${html.slice(at)}`;
  }
  return `<!DOCTYPE html><html><head>${meta}</head><body>${html}</body></html>`;
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);
}

/** A page around the markdown report's rendered body, with a note on how to get the sampled report. */
export function markdownPage(title: string, renderedBody: string, note: string, cspSource: string): string {
  return withPolicy(
    [
      "<!DOCTYPE html>",
      '<html lang="en"><head><meta charset="utf-8">',
      `<title>${escapeHtml(title)}</title>`,
      "<style>body{font-family:var(--vscode-font-family);color:var(--vscode-foreground);padding:0 1.5em;}",
      "table{border-collapse:collapse}td,th{border:1px solid var(--vscode-panel-border);padding:2px 6px}",
      ".note{border-left:3px solid var(--vscode-textLink-foreground);padding:4px 10px;margin:1em 0}</style>",
      "</head><body>",
      `<p class="note">${escapeHtml(note)}</p>`,
      renderedBody,
      "</body></html>",
    ].join("\n"),
    cspSource,
  );
}
