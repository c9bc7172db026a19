// Open an outrun trace.json in Chromium's own trace viewer (DevTools' Performance panel, the
// trace_app page) and save a screenshot: every track expanded, the first decode of rank 0
// selected so that its args show. A development aid for docs/logs.md, not part of outrun: it
// drives DevTools internals that may change between Chromium releases.
//
// node --experimental-websocket screenshot.js DEBUG_PORT TRACE_JSON OUT_PNG
const fs = require('fs');
const [port, trace, out] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const target = await (await fetch(`http://127.0.0.1:${port}/json/new?devtools://devtools/bundled/trace_app.html`, { method: 'PUT' })).json();
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((r) => ws.addEventListener('open', r));
  let id = 0;
  const pending = new Map();
  ws.addEventListener('message', (m) => {
    const d = JSON.parse(m.data);
    if (pending.has(d.id)) { pending.get(d.id)(d); pending.delete(d.id); }
  });
  const send = (method, params = {}) => new Promise((r) => { pending.set(++id, r); ws.send(JSON.stringify({ id, method, params })); });
  const evaluate = async (expression) => {
    const r = await send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true });
    if (r.result.exceptionDetails) throw new Error(JSON.stringify(r.result.exceptionDetails).slice(0, 500));
    return r.result.result.value;
  };
  await send('Emulation.setDeviceMetricsOverride', { width: 1600, height: 1000, deviceScaleFactor: 1, mobile: false });
  await sleep(3000);
  const data = fs.readFileSync(trace, 'utf8');
  await evaluate(`(async () => {
    const T = await import('./panels/timeline/timeline.js');
    const UI = await import('./ui/legacy/legacy.js');
    await UI.ViewManager.ViewManager.instance().showView('timeline');
    window.__panel = T.TimelinePanel.TimelinePanel.instance();
    await window.__panel.loadFromFile(new File([${JSON.stringify(data)}], 'trace.json'));
  })()`);
  await sleep(3000);
  const shown = await evaluate(`(async () => {
    const fc = window.__panel.flameChart;
    const main = fc.getMainFlameChart();
    const groups = main.timelineData().groups;
    for (let i = 0; i < groups.length; i++) main.expandGroup(i);
    const dp = fc.getMainDataProvider();
    const pick = dp.entryData.findIndex((e) => e && e.name === 'decode' && e.pid === 0);
    if (pick >= 0) window.__panel.select({ event: dp.eventByIndex(pick) });
    await new Promise((r) => setTimeout(r, 1000));
    // the notice of a DevTools with no page to inspect
    const walk = (root) => root.querySelectorAll('*').forEach((el) => {
      if (!el.shadowRoot) return;
      if (/Debugging connection was closed/.test(el.shadowRoot.textContent || '')) {
        let n = el;
        while (n.getRootNode() !== document) n = n.getRootNode().host;
        while (n.parentElement && n.parentElement !== document.body) n = n.parentElement;
        n.remove();
      } else walk(el.shadowRoot);
    });
    walk(document);
    return groups.length;
  })()`);
  // hide the sidebar
  for (const type of ['mousePressed', 'mouseReleased']) await send('Input.dispatchMouseEvent', { type, x: 16, y: 39, button: 'left', clickCount: 1 });
  await sleep(1500);
  const shot = await send('Page.captureScreenshot', { format: 'png' });
  fs.writeFileSync(out, Buffer.from(shot.result.data, 'base64'));
  console.log(`${out}: ${shown} tracks`);
  ws.close();
}

main().catch((e) => { console.error(`screenshot: ${e.message}`); process.exit(1); });
