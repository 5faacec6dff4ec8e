// The HTML report of `attune analyze --html` in a real browser (Debian's Chromium via
// playwright-core). For a committed fixture it asserts that the rendered SVG has one lane per
// signal type the JSON result reports and one CQI point per timeline period, and saves a
// screenshot (target/browser/report.png, a CI artifact); for a recording with no signals it
// asserts the page says so plainly. run.sh builds the server first (or set ATTUNE_BIN).
// Exit status 0 when every check passed, 1 otherwise.

import { chromium } from 'playwright-core';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const ATTUNE = path.resolve(ROOT, process.env.ATTUNE_BIN || 'target/debug/attune');
const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
const SHOTS = path.join(ROOT, 'target/browser');
const WITH_SIGNALS = { file: 'tests/fixtures/speech/two_voices.wav', model: 'inter-2-audio' };
const WITHOUT_SIGNALS = { file: 'tests/fixtures/speech/baseline.wav', model: 'inter-2-audio' };

const failures = [];
function check(condition, message) {
  if (!condition) failures.push(message);
  return condition;
}

/** Runs `attune analyze --json --html`; answers the JSON result and the report's path. */
function analyze({ file, model }, work) {
  const html = path.join(work, `${path.basename(file)}.html`);
  const env = Object.fromEntries(Object.entries(process.env).filter(([n]) => !n.startsWith('ATTUNE_')));
  const json = execFileSync(
    ATTUNE,
    ['analyze', path.join(ROOT, file), '--model', model, '--json', '--quiet', '--html', html],
    { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return { result: JSON.parse(json), html };
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'attune-report-'));
fs.mkdirSync(SHOTS, { recursive: true });
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  const requests = [];
  page.on('request', (r) => { if (!r.url().startsWith('file:')) requests.push(r.url()); });

  const { result, html } = analyze(WITH_SIGNALS, work);
  await page.goto(pathToFileURL(html).href);
  const types = new Set(result.windows.flatMap((w) => w.signals.map((s) => s.type)));
  const lanes = await page.$$eval('svg.timeline g.signal-lane', (gs) => gs.map((g) => g.dataset.signal));
  check(types.size > 0, `${WITH_SIGNALS.file} reports no signal: pick a fixture with signals`);
  check(lanes.length === types.size && lanes.every((l) => types.has(l)),
    `lanes ${JSON.stringify(lanes)} are not the reported signals ${JSON.stringify([...types])}`);
  const periods = result.conversation_quality?.timeline?.length ?? 0;
  const points = await page.$$eval('svg.cqi-chart circle.cqi-point', (cs) => cs.length);
  check(periods > 0 && points === periods, `${points} CQI points for ${periods} periods`);
  const bands = await page.$$eval('svg.timeline g.engagement-band rect', (rs) => rs.length);
  check(bands === result.windows.length, `${bands} engagement blocks for ${result.windows.length} windows`);
  const box = await page.$eval('svg.timeline', (s) => s.getBoundingClientRect().width);
  check(box > 600, `the timeline is drawn ${box}px wide`);
  check(requests.length === 0, `the report made requests: ${requests.join(', ')}`);
  await page.screenshot({ path: path.join(SHOTS, 'report.png'), fullPage: true });

  const empty = analyze(WITHOUT_SIGNALS, work);
  const emptyTypes = empty.result.windows.flatMap((w) => w.signals);
  check(emptyTypes.length === 0, `${WITHOUT_SIGNALS.file} has signals: pick a fixture without`);
  await page.goto(pathToFileURL(empty.html).href);
  const text = await page.innerText('body');
  check(text.includes('No signals were detected in this recording.'),
    'the report of a recording without signals does not say so');
  check(await page.$$eval('g.signal-lane', (gs) => gs.length) === 0, 'lanes without signals');
  await page.screenshot({ path: path.join(SHOTS, 'report-no-signals.png'), fullPage: true });
} finally {
  await browser.close();
  fs.rmSync(work, { recursive: true, force: true });
}
if (failures.length > 0) {
  for (const f of failures) console.error(`FAIL: ${f}`);
  process.exit(1);
}
console.log('report: ok (screenshots in target/browser/)');
