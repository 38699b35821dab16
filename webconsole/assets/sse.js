// readEvents parses a text/event-stream response body (fetch, not
// EventSource, because EventSource can neither POST nor send a header)
// and calls onEvent(name, data) for every event; data is the joined data
// lines, unparsed. Comment lines (keep-alives) are skipped.
export async function readEvents(resp, onEvent) {
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value.replace(/\r\n?/g, '\n');
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      dispatch(block, onEvent);
    }
  }
  if (buf.trim() !== '') dispatch(buf, onEvent);
}

function dispatch(block, onEvent) {
  let name = 'message';
  const data = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') name = value;
    else if (field === 'data') data.push(value);
  }
  if (data.length > 0) onEvent(name, data.join('\n'));
}
