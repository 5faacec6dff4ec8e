// The /demo page in a real browser: Debian's Chromium, driven by playwright-core, with a fake
// camera and a real speech recording as the microphone, against a real `attune serve`.
//
// It builds nothing: run.sh builds the server first (or set ATTUNE_BIN to a built `attune`).
// It starts the server on 127.0.0.1 with a fresh store and a demo key, opens /demo, presses
// Start and asserts, within fixed bounds, that:
// - session.ready arrived and at least one engagement.updated and one
//   conversation_quality.updated were rendered (an engagement state and a CQI point);
// - no error was shown and no script or policy error was logged by the page;
// - the WebSocket offered the subprotocol pair with the client token (not the key) and the
//   server acknowledged `access_token` alone;
// - the API key appears nowhere the browser can see (DOM, storage, cookies, any request or
//   response, any WebSocket frame) and the server log holds neither key nor token;
// - Stop sends session.close and the page shows the session ended, still without errors.
// Screenshots: target/browser/demo.png (streaming) and target/browser/demo-ended.png.
// Exit status 0 when every check passed, 1 otherwise.

import { chromium } from 'playwright-core';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const ATTUNE = path.resolve(ROOT, process.env.ATTUNE_BIN || 'target/debug/attune');
const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
const SPEECH = path.join(ROOT, 'tests/fixtures/speech/hesitant.wav');
const SHOTS = path.join(ROOT, 'target/browser');
// Bounds, not expectations: results normally arrive 5-15 s into a session.
const FIRST_RESULTS_MS = 60_000;
const MORE_POINTS_MS = 25_000;
const ENDED_MS = 60_000;
const SERVER_START_MS = 30_000;

const failures = [];
function check(condition, message) {
  if (!condition) failures.push(message);
  return condition;
}

/** Environment for the server: the caller's, without its ATTUNE_* settings. */
function serverEnv(extra) {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('ATTUNE_')),
  );
  return { ...env, ATTUNE_LOG: 'info', ...extra };
}

async function startServer(work) {
  const store = path.join(work, 'attune.sqlite3');
  const key = execFileSync(
    ATTUNE,
    ['keys', 'create', '--account', 'demo', '--scopes', 'service.stream,service.stream.inter-2'],
    { env: serverEnv({ ATTUNE_STORE_PATH: store }), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  ).trim();
  if (!/^atk_[0-9a-f]{64}$/.test(key)) throw new Error('`attune keys create` printed no key');
  const logPath = path.join(work, 'server.log');
  const log = fs.openSync(logPath, 'w');
  const server = spawn(ATTUNE, ['serve', '--bind', '127.0.0.1:0'], {
    env: serverEnv({ ATTUNE_STORE_PATH: store, ATTUNE_DEMO_API_KEY: key }),
    stdio: ['ignore', 'ignore', log],
  });
  fs.closeSync(log);
  const deadline = Date.now() + SERVER_START_MS;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) break;
    const match = /listening addr=(\S+)/.exec(fs.readFileSync(logPath, 'utf8'));
    if (match) return { server, key, logPath, addr: match[1] };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  server.kill('SIGKILL');
  throw new Error(`attune serve did not start:\n${fs.readFileSync(logPath, 'utf8')}`);
}

async function stopServer(server) {
  if (server.exitCode !== null) return;
  server.kill('SIGTERM');
  const timer = setTimeout(() => server.kill('SIGKILL'), 15_000);
  await once(server, 'exit');
  clearTimeout(timer);
}

/** Everything the browser sends or receives, as text, to search for the key. */
function watchTraffic(page, seen) {
  const pending = [];
  page.on('request', (request) => {
    seen.texts.push(`${request.method()} ${request.url()}`, JSON.stringify(request.headers()),
      request.postData() || '');
  });
  page.on('response', (response) => {
    seen.texts.push(JSON.stringify(response.headers()));
    pending.push(response.text().then((body) => {
      seen.texts.push(body);
      if (response.url().endsWith('/demo/token')) seen.tokenResponse = body;
    }, () => {}));
  });
  page.on('websocket', (ws) => {
    seen.websockets.push(ws.url());
    const frame = ({ payload }) => {
      if (typeof payload === 'string') seen.texts.push(payload);
    };
    ws.on('framesent', frame);
    ws.on('framereceived', frame);
  });
  return () => Promise.all(pending);
}

/** The WebSocket handshake headers, as Chromium's network layer saw them. */
async function watchHandshake(context, page) {
  const handshake = { request: null, response: null };
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  cdp.on('Network.webSocketWillSendHandshakeRequest', (event) => {
    handshake.request = event.request.headers;
  });
  cdp.on('Network.webSocketHandshakeResponseReceived', (event) => {
    handshake.response = event.response.headers;
  });
  return handshake;
}

const header = (headers, name) => {
  const found = Object.entries(headers || {}).find(([key]) => key.toLowerCase() === name);
  return found ? found[1] : undefined;
};

async function pageState(page) {
  return page.evaluate(() => ({
    demo: document.body.dataset.demo,
    state: document.getElementById('session-state').textContent,
    status: document.getElementById('status').textContent,
    protocol: document.getElementById('ws-protocol').textContent,
    engagement: document.getElementById('engagement').dataset.state,
    points: document.querySelectorAll('#cqi-table tbody tr').length,
    signals: document.querySelectorAll('#signals li').length,
    errors: [...document.querySelectorAll('#errors li')].map((li) => li.textContent),
    counts: Object.fromEntries([...document.querySelectorAll('#event-counts tbody tr')]
      .map((row) => [row.dataset.type, Number(row.querySelector('td').textContent)])),
  }));
}

async function run(work) {
  const { server, key, logPath, addr } = await startServer(work);
  const pageUrl = `http://${addr}/demo`;
  let context;
  try {
    context = await chromium.launchPersistentContext(path.join(work, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      chromiumSandbox: false,
      viewport: { width: 1280, height: 900 },
      args: [
        '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
        '--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream',
        `--use-file-for-fake-audio-capture=${SPEECH}`,
      ],
    });
    await context.grantPermissions(['camera', 'microphone'], { origin: `http://${addr}` });
    const page = context.pages()[0] || (await context.newPage());
    const consoleErrors = [];
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(`uncaught: ${error.message}`));
    const seen = { texts: [], websockets: [], tokenResponse: null };
    const settled = watchTraffic(page, seen);
    const handshake = await watchHandshake(context, page);

    await page.goto(pageUrl, { waitUntil: 'load' });
    check((await pageState(page)).demo === 'enabled', 'the page does not say the demo is enabled');
    await page.getByRole('button', { name: 'Start' }).click();

    const results = await page.waitForFunction(() => {
      const engagement = document.getElementById('engagement').dataset.state;
      const points = document.querySelectorAll('#cqi-table tbody tr').length;
      const errors = document.querySelectorAll('#errors li').length;
      return errors > 0 || (engagement !== 'none' && points >= 1);
    }, null, { timeout: FIRST_RESULTS_MS, polling: 250 }).then(() => true, () => false);
    let state = await pageState(page);
    check(results, `no engagement state and CQI point within ${FIRST_RESULTS_MS / 1000} s: `
      + JSON.stringify(state));
    check(state.errors.length === 0, `the page shows errors: ${JSON.stringify(state.errors)}`);
    check(state.counts['session.ready'] === 1, `session.ready count: ${state.counts['session.ready']}`);
    check(state.counts['engagement.updated'] >= 1, 'no engagement.updated rendered');
    check(state.counts['conversation_quality.updated'] >= 1, 'no conversation_quality.updated rendered');
    check(['engaged', 'neutral', 'disengaged'].includes(state.engagement),
      `engagement state shown: ${state.engagement}`);
    check(state.protocol === 'access_token', `negotiated subprotocol: ${state.protocol}`);

    // A few more periods make the chart worth looking at; not a check.
    if (results && state.errors.length === 0) {
      await page.waitForFunction(() => document.querySelectorAll('#cqi-table tbody tr').length >= 3,
        null, { timeout: MORE_POINTS_MS, polling: 500 }).catch(() => {});
    }
    fs.mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, 'demo.png'), fullPage: true });

    await page.getByRole('button', { name: 'Stop' }).click();
    const ended = await page.waitForFunction(
      () => ['ended', 'closed', 'failed'].includes(document.getElementById('session-state').textContent),
      null, { timeout: ENDED_MS, polling: 250 },
    ).then(() => true, () => false);
    state = await pageState(page);
    check(ended && state.state === 'ended', `after Stop the session is "${state.state}" (${state.status})`);
    check(state.counts['session.closing'] === 1, 'no session.closing after Stop');
    check(state.counts['session.ended'] === 1, 'no session.ended after Stop');
    check(state.errors.length === 0, `errors after Stop: ${JSON.stringify(state.errors)}`);
    await page.screenshot({ path: path.join(SHOTS, 'demo-ended.png'), fullPage: true });

    // The credential: the token in the subprotocol pair, acknowledged as access_token alone.
    await settled();
    const minted = seen.tokenResponse ? JSON.parse(seen.tokenResponse) : {};
    const token = minted.access_token;
    check(/^att_[0-9a-f]{64}$/.test(token || ''), 'the page got no client token from /demo/token');
    check(JSON.stringify(minted.allowed_origins) === JSON.stringify([`http://${addr}`]),
      `the token's allowed origins: ${JSON.stringify(minted.allowed_origins)}`);
    check(seen.websockets.length === 1 && new URL(seen.websockets[0]).pathname === '/v2/stream/analyze',
      `WebSockets opened: ${JSON.stringify(seen.websockets)}`);
    const offered = header(handshake.request, 'sec-websocket-protocol');
    check(offered === `access_token, ${token}`, 'the handshake did not offer [access_token, token]');
    check(!header(handshake.request, 'authorization'), 'the handshake carried Authorization');
    check(header(handshake.response, 'sec-websocket-protocol') === 'access_token',
      `the server acknowledged ${header(handshake.response, 'sec-websocket-protocol')}`);

    // The key: nowhere the browser can see, and neither credential in the server log.
    const dom = await page.content();
    const storage = await page.evaluate(() => JSON.stringify([{ ...localStorage }, { ...sessionStorage }]));
    const cookies = JSON.stringify(await context.cookies());
    check(!dom.includes(key), 'the API key is in the DOM');
    check(!storage.includes(key), 'the API key is in web storage');
    check(!cookies.includes(key), 'the API key is in a cookie');
    check(seen.texts.length > 0 && !seen.texts.some((text) => text.includes(key)),
      'the API key was sent to or received by the browser');
    check(consoleErrors.length === 0, `the page logged errors: ${JSON.stringify(consoleErrors)}`);
    await context.close();
    context = null;
    await stopServer(server);
    const log = fs.readFileSync(logPath, 'utf8');
    check(!log.includes(key), 'the server logged the API key');
    check(!token || !log.includes(token), 'the server logged the client token');
    check(!log.includes('panicked'), 'the server panicked');
    if (failures.length) console.error(`server log:\n${log}`);
  } finally {
    if (context) await context.close().catch(() => {});
    await stopServer(server);
  }
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'attune-browser-'));
try {
  if (!fs.existsSync(ATTUNE)) throw new Error(`${ATTUNE} is not built (run tests/browser/run.sh)`);
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing (apt-get install chromium)`);
  await run(work);
} catch (error) {
  failures.push(`${error.stack || error}`);
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}

if (failures.length) {
  for (const failure of failures) console.error(`FAIL ${failure}`);
  console.log('browser: 0 passed, 1 failed');
  process.exit(1);
}
console.log(`demo page checks passed; screenshots in ${SHOTS}`);
console.log('browser: 1 passed, 0 failed');
