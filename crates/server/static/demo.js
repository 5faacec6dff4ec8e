// Attune live demo: asks this server for a client token, streams the camera and microphone
// to /v2/stream/analyze with it, and renders the events. Plain browser JavaScript with no
// dependencies, so the page works offline and without a build step.
'use strict';

(() => {
  const INCLUDE = ['conversation_quality_overall', 'conversation_quality_timeline'];
  // Recorded chunk length: the server reads one continuous WebM (header in the first chunk,
  // clusters after), so a short timeslice only makes results arrive sooner.
  const TIMESLICE_MS = 1000;
  // H.264 first where the browser records it (Chrome, Edge; Safari records only MP4): it is
  // the cheapest of these for the server to decode. VP8/VP9 WebM otherwise (Firefox). The
  // server reads any of them by content.
  const MIME_TYPES = [
    'video/webm;codecs=h264,opus',
    'video/mp4;codecs=avc1,opus',
    'video/mp4;codecs=avc1,mp4a.40.2',
    'video/webm;codecs=vp8,opus',
    'video/webm;codecs=vp9,opus',
    'video/webm',
  ];
  // Modest rates: the analysis needs speech and a face, not broadcast quality, and the
  // demo token's byte cap then lasts the whole session.
  const VIDEO_BITS_PER_SECOND = 800000;
  const AUDIO_BITS_PER_SECOND = 64000;
  const SERIES = [
    { key: 'quality_index', label: 'Quality index', color: '#1d4ed8', dash: '', width: 3.5 },
    { key: 'clarity', label: 'Clarity', color: '#0e9384', dash: '', width: 2 },
    { key: 'authority', label: 'Authority', color: '#7a5af8', dash: '7 4', width: 2 },
    { key: 'energy', label: 'Energy', color: '#e04f16', dash: '2 3', width: 2 },
    { key: 'rapport', label: 'Rapport', color: '#dd2590', dash: '10 3 2 3', width: 2 },
    { key: 'learning', label: 'Learning', color: '#ca8504', dash: '4 2', width: 2 },
  ];
  const CLOSE_CODES = {
    1000: 'normal closure',
    1001: 'the server is going away',
    1006: 'the connection was lost without a close frame',
    1008: 'policy violation',
    1009: 'message too large',
    1011: 'internal server error',
    1013: 'try again later',
    4001: 'credentials refused',
    4003: 'not allowed',
    4008: 'idle timeout',
    4029: 'limit reached',
  };
  const SVG_NS = 'http://www.w3.org/2000/svg';

  const $ = (id) => document.getElementById(id);
  const ui = {
    start: $('start'),
    stop: $('stop'),
    status: $('status'),
    state: $('session-state'),
    protocol: $('ws-protocol'),
    recording: $('recording'),
    mediaSent: $('media-sent'),
    preview: $('preview'),
    engagement: $('engagement'),
    engagementSince: $('engagement-since'),
    signals: $('signals'),
    signalsEmpty: $('signals-empty'),
    cqiEmpty: $('cqi-empty'),
    cqiOverall: $('cqi-overall'),
    chart: $('cqi-chart'),
    chartDesc: $('cqi-chart-desc'),
    legend: $('cqi-legend'),
    tableHead: $('cqi-table-head'),
    tableBody: document.querySelector('#cqi-table tbody'),
    errors: $('errors'),
    errorsEmpty: $('errors-empty'),
    counts: $('event-counts'),
    countsBody: document.querySelector('#event-counts tbody'),
    countsEmpty: $('events-empty'),
  };

  /** The running session, or null. */
  let session = null;
  /** The signals currently active, by type. */
  const signals = new Map();
  /** One entry per closed CQI period: {start, end, values}. */
  let points = [];
  const eventCounts = new Map();

  const seconds = (value) => `${Number(value).toFixed(1)} s`;
  const clock = (value) => {
    const whole = Math.max(0, Math.round(value));
    return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, '0')}`;
  };
  const words = (text) => String(text).replace(/_/g, ' ');

  function setState(state, message) {
    document.body.dataset.session = state;
    ui.state.textContent = state;
    if (message) ui.status.textContent = message;
  }

  function showError(title, message, link) {
    const item = document.createElement('li');
    const strong = document.createElement('strong');
    strong.textContent = title;
    item.append(strong, document.createTextNode(message || ''));
    if (link) {
      const anchor = document.createElement('a');
      anchor.href = link;
      anchor.rel = 'noreferrer';
      anchor.textContent = 'documentation';
      item.append(' (', anchor, ')');
    }
    ui.errors.append(item);
    ui.errorsEmpty.hidden = true;
  }

  function countEvent(type) {
    eventCounts.set(type, (eventCounts.get(type) || 0) + 1);
    ui.countsBody.replaceChildren(
      ...[...eventCounts].map(([name, count]) => {
        const row = document.createElement('tr');
        row.dataset.type = name;
        const th = document.createElement('th');
        th.scope = 'row';
        th.textContent = name;
        const td = document.createElement('td');
        td.textContent = String(count);
        row.append(th, td);
        return row;
      }),
    );
    ui.counts.hidden = false;
    ui.countsEmpty.hidden = true;
  }

  function resetViews() {
    signals.clear();
    points = [];
    eventCounts.clear();
    ui.errors.replaceChildren();
    ui.errorsEmpty.hidden = false;
    ui.countsBody.replaceChildren();
    ui.counts.hidden = true;
    ui.countsEmpty.hidden = false;
    ui.engagement.dataset.state = 'none';
    ui.engagement.textContent = 'Waiting for the first analysis window (about 5 s of media).';
    ui.engagementSince.textContent = '';
    ui.protocol.textContent = 'none yet';
    ui.recording.textContent = 'not started';
    ui.mediaSent.textContent = 'nothing yet';
    ui.cqiOverall.hidden = true;
    ui.cqiEmpty.hidden = false;
    renderSignals();
    renderChart();
    renderTable();
  }

  // ---- Token and connection ----

  async function requestToken() {
    const response = await fetch(new URL('demo/token', document.baseURI), {
      method: 'POST',
      headers: { Accept: 'application/json' },
      credentials: 'same-origin',
      cache: 'no-store',
    });
    let body = null;
    try {
      body = await response.json();
    } catch {
      // A non-JSON answer (a proxy's error page, say) is reported by status below.
    }
    if (!response.ok || !body || typeof body.access_token !== 'string') {
      const error = new Error(
        (body && body.message) || `The token request answered HTTP ${response.status}.`,
      );
      error.code = (body && body.error_id) || `HTTP ${response.status}`;
      error.link = body && body.link;
      throw error;
    }
    return body;
  }

  function streamUrl() {
    const url = new URL('v2/stream/analyze', document.baseURI);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    return url.href;
  }

  function pickMimeType() {
    if (typeof MediaRecorder === 'undefined') return null;
    return MIME_TYPES.find((type) => MediaRecorder.isTypeSupported(type)) || null;
  }

  async function start() {
    if (session) return;
    ui.start.disabled = true;
    resetViews();
    const mimeType = pickMimeType();
    if (!mimeType) {
      showError(
        'Unsupported browser: ',
        'this browser cannot record WebM or MP4 video with MediaRecorder.',
      );
      ui.start.disabled = false;
      return;
    }
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
      showError(
        'Camera unavailable: ',
        'the browser offers no camera here. Pages need https, or http://localhost, to use one.',
      );
      ui.start.disabled = false;
      return;
    }
    const current = { ws: null, stream: null, recorder: null, mimeType, chunks: 0, bytes: 0,
      stopping: false, closeSent: false, ended: false };
    session = current;
    try {
      setState('starting', 'Asking for your camera and microphone…');
      current.stream = await navigator.mediaDevices.getUserMedia({
        video: { width: { ideal: 640 }, height: { ideal: 360 }, frameRate: { ideal: 15 } },
        // The analysis reads the voice itself: browser processing would flatten it.
        audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false },
      });
      ui.preview.srcObject = current.stream;
      setState('starting', 'Asking the server for a client token…');
      const token = await requestToken();
      setState('connecting', 'Connecting to the stream endpoint…');
      // Browsers cannot set Authorization on a WebSocket: the token travels as the
      // second subprotocol item, and the server echoes only `access_token`.
      const ws = new WebSocket(streamUrl(), ['access_token', token.access_token]);
      ws.binaryType = 'arraybuffer';
      current.ws = ws;
      ws.addEventListener('open', () => onOpen(current));
      ws.addEventListener('message', (event) => onMessage(current, event));
      ws.addEventListener('close', (event) => onClose(current, event));
    } catch (error) {
      const title = error.name === 'NotAllowedError' ? 'Camera or microphone refused: '
        : error.code ? `${error.code}: ` : 'Could not start: ';
      showError(title, error.message, error.link);
      finish(current, 'failed', 'The session could not start.');
    }
  }

  function onOpen(current) {
    ui.protocol.textContent = current.ws.protocol || '(none)';
    ui.protocol.dataset.protocol = current.ws.protocol;
    setState('connected', 'Connected; waiting for session.ready…');
    // Existing clients send their config right after the socket opens; the server accepts it.
    current.ws.send(JSON.stringify({ include: INCLUDE }));
  }

  function startRecording(current) {
    if (current.recorder || current.stopping) return;
    const recorder = new MediaRecorder(current.stream, {
      mimeType: current.mimeType,
      videoBitsPerSecond: VIDEO_BITS_PER_SECOND,
      audioBitsPerSecond: AUDIO_BITS_PER_SECOND,
    });
    current.recorder = recorder;
    recorder.addEventListener('dataavailable', (event) => {
      if (event.data.size === 0 || current.closeSent) return;
      if (current.ws.readyState !== WebSocket.OPEN) return;
      current.ws.send(event.data);
      current.chunks += 1;
      current.bytes += event.data.size;
      ui.mediaSent.textContent =
        `${current.chunks} chunks, ${(current.bytes / 1048576).toFixed(1)} MiB`;
    });
    // The last chunk comes in the final dataavailable, just before stop: close after it.
    recorder.addEventListener('stop', () => {
      stopTracks(current);
      if (current.stopping) sendClose(current);
    });
    recorder.start(TIMESLICE_MS);
    ui.recording.textContent = current.mimeType
      .replace('video/webm;codecs=', 'WebM: ')
      .replace('video/mp4;codecs=', 'MP4: ');
    ui.stop.disabled = false;
    setState('streaming', 'Streaming. Speak naturally; results follow the media by a few seconds.');
  }

  function stop() {
    const current = session;
    if (!current || current.stopping) return;
    current.stopping = true;
    ui.stop.disabled = true;
    setState('closing', 'Stopping: sending the last recorded chunk…');
    if (current.recorder && current.recorder.state !== 'inactive') {
      current.recorder.stop();
    } else {
      stopTracks(current);
      sendClose(current);
    }
  }

  function sendClose(current) {
    if (current.closeSent || !current.ws || current.ws.readyState !== WebSocket.OPEN) return;
    current.closeSent = true;
    current.ws.send(JSON.stringify({ type: 'session.close' }));
    setState('closing', 'Closing: the server finishes analyzing what it received…');
  }

  function stopTracks(current) {
    if (current.stream) current.stream.getTracks().forEach((track) => track.stop());
  }

  function onClose(current, event) {
    if (!current.ended) {
      const meaning = CLOSE_CODES[event.code] || 'closed';
      showError(
        `Connection closed (${event.code}): `,
        event.reason ? `${meaning}; ${event.reason}` : meaning,
      );
      finish(current, 'closed', `The connection closed with code ${event.code}.`);
    } else {
      finish(current, 'ended');
    }
  }

  function finish(current, state, message) {
    if (current.recorder && current.recorder.state !== 'inactive') {
      current.stopping = false;
      current.recorder.stop();
    }
    stopTracks(current);
    if (current.ws && current.ws.readyState <= WebSocket.OPEN) current.ws.close(1000);
    ui.preview.srcObject = null;
    if (session === current) session = null;
    ui.stop.disabled = true;
    ui.start.disabled = document.body.dataset.demo !== 'enabled';
    // An ended session already said so when session.ended arrived.
    if (state !== 'ended') setState(state, message);
  }

  // ---- Events ----

  function onMessage(current, event) {
    if (typeof event.data !== 'string') return;
    let envelope;
    try {
      envelope = JSON.parse(event.data);
    } catch {
      showError('Unreadable message: ', 'the server sent text that is not JSON.');
      return;
    }
    const data = envelope.data || {};
    countEvent(envelope.type);
    switch (envelope.type) {
      case 'session.ready':
        startRecording(current);
        break;
      case 'engagement.updated':
        ui.engagement.dataset.state = data.state;
        ui.engagement.textContent = words(data.state);
        ui.engagementSince.textContent = `since ${seconds(data.start)} of session time`;
        break;
      case 'signal.detected':
      case 'signal.updated':
        signals.set(data.signal_type, data);
        renderSignals();
        break;
      case 'signal.ended':
        signals.delete(data.signal_type);
        renderSignals();
        break;
      case 'conversation_quality.updated':
        onQuality(data);
        break;
      case 'error': {
        const where = data.segment === null || data.segment === undefined ? ''
          : ` (segment ${data.segment})`;
        showError(`${data.code}: `, `${data.message}${where}`, data.link);
        break;
      }
      case 'session.closing':
        setState('closing',
          `Closing: the server finishes analyzing what it received (at most ${data.max_drain_seconds} s)…`);
        break;
      case 'session.ended':
        current.ended = true;
        setState('ended', `Session ended (${words(data.reason)}).`);
        break;
      default:
        // session.updated and coverage notices are counted above; nothing else to show.
        break;
    }
  }

  function renderSignals() {
    const items = [...signals.values()]
      .sort((a, b) => a.signal_type.localeCompare(b.signal_type))
      .map((signal) => {
        const item = document.createElement('li');
        item.dataset.signal = signal.signal_type;
        const head = document.createElement('div');
        head.className = 'signal-head';
        const name = document.createElement('span');
        name.className = 'signal-name';
        name.textContent = words(signal.signal_type);
        head.append(name);
        if (signal.probability) {
          const badge = document.createElement('span');
          badge.className = 'badge';
          badge.dataset.probability = signal.probability;
          badge.textContent = signal.probability;
          badge.setAttribute('aria-label', `probability ${signal.probability}`);
          head.append(badge);
        }
        const since = document.createElement('span');
        since.className = 'signal-since';
        since.textContent = `since ${seconds(signal.start)}`;
        head.append(since);
        item.append(head);
        if (signal.rationale) {
          const rationale = document.createElement('p');
          rationale.className = 'signal-rationale';
          rationale.textContent = signal.rationale;
          item.append(rationale);
        }
        return item;
      });
    ui.signals.replaceChildren(...items);
    ui.signalsEmpty.hidden = items.length > 0;
  }

  // ---- Conversation Quality Index ----

  function onQuality(data) {
    const timeline = Array.isArray(data.timeline) ? data.timeline : [];
    for (const entry of timeline) {
      if (entry && entry.values) points.push(entry);
    }
    points.sort((a, b) => a.end - b.end);
    if (data.overall) renderOverall(data.overall);
    renderChart();
    renderTable();
  }

  function renderOverall(values) {
    const tiles = SERIES.map((series) => {
      const tile = document.createElement('div');
      const dt = document.createElement('dt');
      dt.textContent = series.label;
      const dd = document.createElement('dd');
      dd.textContent = String(Math.round(values[series.key]));
      tile.append(dt, dd);
      return tile;
    });
    ui.cqiOverall.replaceChildren(...tiles);
    ui.cqiOverall.hidden = false;
  }

  function svg(name, attributes, text) {
    const element = document.createElementNS(SVG_NS, name);
    for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
    if (text !== undefined) element.textContent = text;
    return element;
  }

  function tickStep(span) {
    return [10, 15, 30, 60, 120, 300, 600, 900, 1800].find((step) => span / step <= 8) || 3600;
  }

  function renderChart() {
    const width = 720;
    const height = 280;
    const margin = { left: 40, right: 16, top: 12, bottom: 30 };
    const span = Math.max(60, ...points.map((p) => p.end));
    const x = (t) => margin.left + (t / span) * (width - margin.left - margin.right);
    const y = (v) => margin.top + (1 - v / 100) * (height - margin.top - margin.bottom);
    const layers = [];
    for (const value of [0, 25, 50, 75, 100]) {
      layers.push(svg('line', { class: 'grid', x1: margin.left, x2: width - margin.right,
        y1: y(value), y2: y(value) }));
      layers.push(svg('text', { class: 'axis-label', x: margin.left - 8, y: y(value) + 4,
        'text-anchor': 'end' }, String(value)));
    }
    const step = tickStep(span);
    for (let t = 0; t <= span + 1e-9; t += step) {
      layers.push(svg('text', { class: 'axis-label', x: x(t), y: height - 8,
        'text-anchor': 'middle' }, clock(t)));
    }
    // The quality index last, so it is drawn over the dimensions.
    for (const series of [...SERIES.slice(1), SERIES[0]]) {
      const coordinates = points.map((p) => [x(p.end), y(p.values[series.key])]);
      const group = svg('g', { stroke: series.color, fill: series.color });
      if (coordinates.length > 1) {
        group.append(svg('polyline', {
          points: coordinates.map(([px, py]) => `${px.toFixed(1)},${py.toFixed(1)}`).join(' '),
          fill: 'none', 'stroke-width': series.width, 'stroke-dasharray': series.dash,
          'stroke-linejoin': 'round', 'stroke-linecap': 'round',
        }));
      }
      points.forEach((p, index) => {
        const [px, py] = coordinates[index];
        const dot = svg('circle', { cx: px.toFixed(1), cy: py.toFixed(1),
          r: series.key === 'quality_index' ? 4 : 2.5, stroke: 'none' });
        dot.append(svg('title', {}, `${series.label} ${Math.round(p.values[series.key])} `
          + `(${clock(p.start)}–${clock(p.end)})`));
        group.append(dot);
      });
      layers.push(group);
    }
    const keep = [...ui.chart.querySelectorAll(':scope > title, :scope > desc')];
    ui.chart.replaceChildren(...keep, ...layers);
    const last = points[points.length - 1];
    ui.chartDesc.textContent = last
      ? `${points.length} periods. Latest, ${clock(last.start)} to ${clock(last.end)}: `
        + SERIES.map((s) => `${s.label} ${Math.round(last.values[s.key])}`).join(', ') + '.'
      : 'No values yet.';
    ui.cqiEmpty.hidden = points.length > 0;
  }

  function renderTable() {
    ui.tableBody.replaceChildren(...points.map((p) => {
      const row = document.createElement('tr');
      const period = document.createElement('th');
      period.scope = 'row';
      period.textContent = `${clock(p.start)}–${clock(p.end)}`;
      row.append(period);
      for (const series of SERIES) {
        const cell = document.createElement('td');
        cell.textContent = String(Math.round(p.values[series.key]));
        row.append(cell);
      }
      return row;
    }));
  }

  function renderLegend() {
    ui.legend.replaceChildren(...SERIES.map((series) => {
      const item = document.createElement('li');
      const swatch = svg('svg', { width: 28, height: 10, 'aria-hidden': 'true' });
      swatch.append(svg('line', { x1: 1, x2: 27, y1: 5, y2: 5, stroke: series.color,
        'stroke-width': series.width, 'stroke-dasharray': series.dash }));
      item.append(swatch, document.createTextNode(series.label));
      return item;
    }));
    ui.tableHead.replaceChildren(ui.tableHead.firstElementChild, ...SERIES.map((series) => {
      const th = document.createElement('th');
      th.scope = 'col';
      th.textContent = series.label;
      return th;
    }));
  }

  // ---- Wiring ----

  renderLegend();
  resetViews();
  ui.start.addEventListener('click', start);
  ui.stop.addEventListener('click', stop);
  window.addEventListener('pagehide', () => {
    if (session && session.ws) session.ws.close(1000);
  });
  if (document.body.dataset.demo !== 'enabled') {
    ui.start.disabled = true;
    setState('disabled', 'The demo is not enabled on this server: see the note above.');
  }
})();
