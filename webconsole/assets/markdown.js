// A deliberately small Markdown: fenced code blocks, inline code, bold and
// links. Model output is text, never HTML: everything is built as DOM
// nodes with textContent, so "<img src=x onerror=...>" shows as those
// characters. Links are made only for http(s) URLs.

const inline = /(`[^`\n]+`)|\*\*([^*\n]+)\*\*|\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)|(https?:\/\/[^\s<>()]+)/g;

export function render(text) {
  const frag = document.createDocumentFragment();
  const parts = String(text).split(/^```[^\n]*\n?/m);
  // Even parts are prose, odd ones code (an unclosed fence runs to the
  // end, which is what a reply still streaming looks like).
  parts.forEach((part, i) => {
    if (i % 2 === 1) {
      const pre = document.createElement('pre');
      const code = document.createElement('code');
      code.textContent = part.replace(/\n$/, '');
      pre.append(code);
      frag.append(pre);
    } else if (part !== '') {
      const div = document.createElement('div');
      div.className = 'prose';
      appendInline(div, part.replace(/^\n+|\n+$/g, ''));
      frag.append(div);
    }
  });
  return frag;
}

function appendInline(parent, text) {
  let last = 0;
  for (const m of text.matchAll(inline)) {
    if (m.index > last) parent.append(text.slice(last, m.index));
    parent.append(inlineNode(m));
    last = m.index + m[0].length;
  }
  if (last < text.length) parent.append(text.slice(last));
}

function inlineNode(m) {
  if (m[1]) {
    const code = document.createElement('code');
    code.textContent = m[1].slice(1, -1);
    return code;
  }
  if (m[2]) {
    const b = document.createElement('strong');
    b.textContent = m[2];
    return b;
  }
  const label = m[3] || m[5];
  return link(m[4] || m[5], label);
}

function link(href, label) {
  let url;
  try { url = new URL(href); } catch { return document.createTextNode(label); }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return document.createTextNode(label);
  const a = document.createElement('a');
  a.href = url.href;
  a.textContent = label;
  a.rel = 'noopener noreferrer';
  a.target = '_blank';
  return a;
}
