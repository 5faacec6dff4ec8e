// The /demo page in a real browser: Debian's Chromium, driven by playwright-core, with a fake
// camera playing a face video and a real speech recording as the microphone, against a real
// `attune serve`.
//
// It builds nothing: run.sh builds the server and the `video_to_y4m` example first (or set
// ATTUNE_BIN and VIDEO_TO_Y4M). The fake cameras are made here: `video_to_y4m` decodes the
// committed face fixture (tests/fixtures/faces/video/astronaut_h264.mp4: a face that nods and
// shakes its head) and the still and black clips to .y4m files in a temporary directory, which
// Chromium loops as its camera (--use-file-for-fake-video-capture).
// It starts the server on 127.0.0.1 with a fresh store and a demo key, opens /demo, presses
// Start and asserts, within fixed bounds, that:
// - the page records H.264 when the browser's MediaRecorder offers it;
// - session.ready arrived and at least one engagement.updated and one
//   conversation_quality.updated were rendered (an engagement state and a CQI point);
// - the page shows a visual signal read from the face: agreement quoting the face's nods or
//   disagreement quoting its head shakes ("Face 1: 2 nods in 1.9 s ...");
// - no error was shown and no script or policy error was logged by the page;
// - the WebSocket offered the subprotocol pair with the client token (not the key) and the
//   server acknowledged `access_token` alone;
// - the API key appears nowhere the browser can see (DOM, storage, cookies, any request or
//   response, any WebSocket frame) and the server log holds neither key nor token;
// - Stop sends session.close and the page shows the session ended, still without errors.
// Then the same with H.264 hidden from the page (MediaRecorder.isTypeSupported answers no for
// it), so it records VP8 or VP9 WebM: the face signal must show again. Then two controls: the
// same face held still (tests/fixtures/faces/video/still_h264.mp4) and a black camera
// (black_vp8.webm), where the page must show the analysis running (CQI points) but no signal
// quoting a face at all: the face check above passes only on movement read from a face.
// Screenshots: target/browser/demo.png (streaming, with the face signal), demo-ended.png,
// demo-vpx.png, demo-still.png and demo-black.png.
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
const VIDEO_TO_Y4M = path.resolve(ROOT,
  process.env.VIDEO_TO_Y4M || path.join(path.dirname(ATTUNE), 'examples', 'video_to_y4m'));
// 320x240, 10 fps, 19 s, looped: nods at 2.3-4.3 s, head shakes at 5.2-7.6 s, a second face
// nodding at 14.5-16.6 s (tests/fixtures/faces/video/README.md).
const FACE_VIDEO = path.join(ROOT, 'tests/fixtures/faces/video/astronaut_h264.mp4');
// Controls: the same face held still (6 s of one picture), and a black picture (6 s).
const STILL_VIDEO = path.join(ROOT, 'tests/fixtures/faces/video/still_h264.mp4');
const BLACK_VIDEO = path.join(ROOT, 'tests/fixtures/faces/video/black_vp8.webm');
// Bounds, not expectations: results normally arrive 5-15 s into a session.
const FIRST_RESULTS_MS = 60_000;
const MORE_POINTS_MS = 25_000;
const ENDED_MS = 60_000;
const SERVER_START_MS = 30_000;
// The face's first nods are 2-4 s into the loop, so agreement can close with the first window;
// the bound leaves room for a slow machine and a debug build.
const FACE_SIGNAL_MS = 90_000;
// Each control runs until this many CQI periods closed (and at least as long as the face took
// to show), bounded by CONTROL_MS.
const CONTROL_POINTS = 3;
const CONTROL_MS = 90_000;
// A rationale quoting a face's gesture, as the analyzer writes it (docs/ANALYZER.md): "Face 1:
// 2 nods in 1.9 s (2.4-4.3 s), pitch amplitude 14 degrees", "face 2 (left): 1 head shake ...".
const FACE_GESTURES = {
  agreement: /(?:^|; )face \d+(?: \((?:left|centre|right)\))?: \d+ nods? in /i,
  disagreement: /(?:^|; )face \d+(?: \((?:left|centre|right)\))?: \d+ head shakes? in /i,
};

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
    recording: document.getElementById('recording').textContent,
    engagement: document.getElementById('engagement').dataset.state,
    points: document.querySelectorAll('#cqi-table tbody tr').length,
    signals: document.querySelectorAll('#signals li').length,
    errors: [...document.querySelectorAll('#errors li')].map((li) => li.textContent),
    counts: Object.fromEntries([...document.querySelectorAll('#event-counts tbody tr')]
      .map((row) => [row.dataset.type, Number(row.querySelector('td').textContent)])),
  }));
}

/** A .y4m camera made from a committed video by the `video_to_y4m` example. */
function makeCamera(video, work) {
  const y4m = path.join(work, `${path.basename(video).replace(/\.\w+$/, '')}.y4m`);
  execFileSync(VIDEO_TO_Y4M, [video, y4m], { stdio: ['ignore', 'ignore', 'pipe'] });
  return y4m;
}

/** Chromium with `camera` (a .y4m file) as its camera, on a fresh profile, and the /demo page. */
async function openDemo(work, addr, name, camera, { hideH264 = false } = {}) {
  const context = await chromium.launchPersistentContext(path.join(work, `profile-${name}`), {
    executablePath: CHROMIUM,
    headless: true,
    chromiumSandbox: false,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream',
      `--use-file-for-fake-video-capture=${camera}`,
      `--use-file-for-fake-audio-capture=${SPEECH}`,
    ],
  });
  await context.grantPermissions(['camera', 'microphone'], { origin: `http://${addr}` });
  if (hideH264) {
    // A browser that records no H.264 (Firefox): the page must fall back to VP8 or VP9.
    await context.addInitScript(() => {
      const offers = MediaRecorder.isTypeSupported.bind(MediaRecorder);
      MediaRecorder.isTypeSupported = (type) => !/h264|avc1/i.test(type) && offers(type);
    });
  }
  const page = context.pages()[0] || (await context.newPage());
  const consoleErrors = [];
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => consoleErrors.push(`uncaught: ${error.message}`));
  return { context, page, consoleErrors };
}

/** Records every signal the page shows (its name and rationale as rendered), from now on. */
async function watchSignals(page) {
  await page.evaluate(() => {
    const list = document.getElementById('signals');
    const shown = [];
    window.attuneShownSignals = shown;
    new MutationObserver(() => {
      for (const item of list.querySelectorAll('li')) {
        const rationale = item.querySelector('.signal-rationale');
        shown.push({ signal: item.dataset.signal, rationale: rationale ? rationale.textContent : '' });
      }
    }).observe(list, { childList: true, subtree: true });
  });
}

async function shownSignals(page) {
  const all = await page.evaluate(() => window.attuneShownSignals);
  const seen = new Map(all.map((s) => [`${s.signal}\n${s.rationale}`, s]));
  return [...seen.values()];
}

/** The signals shown that were read from a face's nods or head shakes. */
const faceGestures = (signals) => signals.filter((s) => FACE_GESTURES[s.signal]
  && FACE_GESTURES[s.signal].test(s.rationale));

/** Waits (up to `timeout` ms) until the page shows a face-gesture signal or an error. */
async function waitForFaceSignal(page, timeout) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const found = faceGestures(await shownSignals(page));
    const errors = (await pageState(page)).errors.length;
    if (found.length > 0 || errors > 0 || Date.now() >= deadline) return found;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function stopSession(page) {
  await page.getByRole('button', { name: 'Stop' }).click();
  return page.waitForFunction(
    () => ['ended', 'closed', 'failed'].includes(document.getElementById('session-state').textContent),
    null, { timeout: ENDED_MS, polling: 250 },
  ).then(() => true, () => false);
}

/** The face camera with every check of the page: results, the face signal, credentials. */
async function faceRun(work, { key, addr }, camera) {
  const { context, page, consoleErrors } = await openDemo(work, addr, 'face', camera);
  try {
    const seen = { texts: [], websockets: [], tokenResponse: null };
    const settled = watchTraffic(page, seen);
    const handshake = await watchHandshake(context, page);

    await page.goto(`http://${addr}/demo`, { waitUntil: 'load' });
    check((await pageState(page)).demo === 'enabled', 'the page does not say the demo is enabled');
    await watchSignals(page);
    const started = Date.now();
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
    const offersH264 = await page.evaluate(() => ['video/webm;codecs=h264,opus',
      'video/mp4;codecs=avc1,opus'].some((type) => MediaRecorder.isTypeSupported(type)));
    check(offersH264, 'this Chromium records no H.264: the H.264 path is not tested');
    check(/h264|avc1/.test(state.recording), `recording "${state.recording}", not H.264`);

    const faces = await waitForFaceSignal(page, FACE_SIGNAL_MS - (Date.now() - started));
    const faceAfter = Date.now() - started;
    fs.mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, 'demo.png'), fullPage: true });
    check(faces.length > 0, `no signal read from the face within ${FACE_SIGNAL_MS / 1000} s; `
      + `signals shown: ${JSON.stringify(await shownSignals(page))}`);
    for (const face of faces) console.log(`face signal after ${faceAfter} ms: ${face.signal}: ${face.rationale}`);
    // A few more periods make the chart worth looking at; not a check.
    state = await pageState(page);
    if (state.errors.length === 0) {
      await page.waitForFunction(() => document.querySelectorAll('#cqi-table tbody tr').length >= 3,
        null, { timeout: MORE_POINTS_MS, polling: 500 }).catch(() => {});
    }

    const ended = await stopSession(page);
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

    // The key: nowhere the browser can see.
    const dom = await page.content();
    const storage = await page.evaluate(() => JSON.stringify([{ ...localStorage }, { ...sessionStorage }]));
    const cookies = JSON.stringify(await context.cookies());
    check(!dom.includes(key), 'the API key is in the DOM');
    check(!storage.includes(key), 'the API key is in web storage');
    check(!cookies.includes(key), 'the API key is in a cookie');
    check(seen.texts.length > 0 && !seen.texts.some((text) => text.includes(key)),
      'the API key was sent to or received by the browser');
    check(consoleErrors.length === 0, `the page logged errors: ${JSON.stringify(consoleErrors)}`);
    return { token, faceAfter };
  } finally {
    await context.close().catch(() => {});
  }
}

/** The face camera on a page that records VP8 or VP9: the face signal again. */
async function vpxRun(work, { addr }, camera) {
  const { context, page, consoleErrors } = await openDemo(work, addr, 'vpx', camera, { hideH264: true });
  try {
    await page.goto(`http://${addr}/demo`, { waitUntil: 'load' });
    await watchSignals(page);
    await page.getByRole('button', { name: 'Start' }).click();
    const faces = await waitForFaceSignal(page, FACE_SIGNAL_MS);
    await page.screenshot({ path: path.join(SHOTS, 'demo-vpx.png'), fullPage: true });
    const state = await pageState(page);
    check(/^WebM: vp[89]/.test(state.recording), `without H.264 the page records "${state.recording}"`);
    check(faces.length > 0, `VP8/VP9: no signal read from the face within ${FACE_SIGNAL_MS / 1000} s; `
      + `signals shown: ${JSON.stringify(await shownSignals(page))}`);
    for (const face of faces) console.log(`${state.recording}: ${face.signal}: ${face.rationale}`);
    check(await stopSession(page), 'VP8/VP9: the session did not end after Stop');
    const errors = (await pageState(page)).errors;
    check(errors.length === 0, `VP8/VP9: the page shows errors: ${JSON.stringify(errors)}`);
    check(consoleErrors.length === 0, `VP8/VP9: the page logged errors: ${JSON.stringify(consoleErrors)}`);
  } finally {
    await context.close().catch(() => {});
  }
}

/**
 * A control camera (`name`: still or black): the analysis runs (CQI periods close, for at least
 * as long as the face took to show) but no signal quotes a face.
 */
async function controlRun(work, { addr }, name, camera, faceAfter) {
  const { context, page, consoleErrors } = await openDemo(work, addr, name, camera);
  try {
    await page.goto(`http://${addr}/demo`, { waitUntil: 'load' });
    await watchSignals(page);
    const started = Date.now();
    await page.getByRole('button', { name: 'Start' }).click();
    const long = Math.min(Math.max(faceAfter, 0) + 10_000, CONTROL_MS);
    const ran = await page.waitForFunction(([points]) => document.querySelectorAll('#errors li').length > 0
      || document.querySelectorAll('#cqi-table tbody tr').length >= points,
    [CONTROL_POINTS], { timeout: CONTROL_MS, polling: 250 }).then(() => true, () => false);
    const left = long - (Date.now() - started);
    if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
    await page.screenshot({ path: path.join(SHOTS, `demo-${name}.png`), fullPage: true });
    const state = await pageState(page);
    check(ran && state.points >= CONTROL_POINTS,
      `${name} camera: ${state.points} CQI periods within ${CONTROL_MS / 1000} s`);
    check(state.errors.length === 0, `${name} camera: the page shows errors: ${JSON.stringify(state.errors)}`);
    const signals = await shownSignals(page);
    console.log(`${name} camera: ${state.points} CQI periods in ${Date.now() - started} ms, `
      + `signal types shown: ${JSON.stringify([...new Set(signals.map((s) => s.signal))])}`);
    check(!signals.some((s) => /\bfaces?\b/i.test(s.rationale)),
      `${name} camera: a signal quotes a face: ${JSON.stringify(signals)}`);
    check(await stopSession(page), `${name} camera: the session did not end after Stop`);
    check(consoleErrors.length === 0,
      `${name} camera: the page logged errors: ${JSON.stringify(consoleErrors)}`);
  } finally {
    await context.close().catch(() => {});
  }
}

async function run(work) {
  const face = makeCamera(FACE_VIDEO, work);
  const still = makeCamera(STILL_VIDEO, work);
  const black = makeCamera(BLACK_VIDEO, work);
  const started = await startServer(work);
  const { server, key, logPath } = started;
  try {
    const { token, faceAfter } = await faceRun(work, started, face);
    await vpxRun(work, started, face);
    await controlRun(work, started, 'still', still, faceAfter);
    await controlRun(work, started, 'black', black, faceAfter);
    await stopServer(server);
    const log = fs.readFileSync(logPath, 'utf8');
    check(!log.includes(key), 'the server logged the API key');
    check(!token || !log.includes(token), 'the server logged the client token');
    check(!log.includes('panicked'), 'the server panicked');
    if (failures.length) console.error(`server log:\n${log}`);
  } finally {
    await stopServer(server);
  }
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'attune-browser-'));
try {
  if (!fs.existsSync(ATTUNE)) throw new Error(`${ATTUNE} is not built (run tests/browser/run.sh)`);
  if (!fs.existsSync(VIDEO_TO_Y4M)) throw new Error(`${VIDEO_TO_Y4M} is not built (run tests/browser/run.sh)`);
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
