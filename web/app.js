// ridgeline's page: a form whose values are the command line's flags, kept in the URL
// query; every change asks the JSON API (/api/predict, /api/explain) and a chart
// (/api/<chart>.svg) for the same flags and shows the answers. No external assets.
'use strict';

const MAX_DEVICES = 4;
const CHARTS = ['roofline', 'throughput', 'memory'];
// form fields that are flags of predict: id = flag name = URL key; value = default
const FIELDS = {
  model: 'llama-3-8b', gpus: '1', parallel: 'tp', ep: '1', batch: '1', prompt: '512',
  gen: '128', weights: '', kv: '', 'expert-weights': '', engine: 'typical', offload: 'none',
  'spec-k': '',
  'spec-accept': '', draft: '',
};
const DEFAULT_DEVICES = ['h100-sxm'];
const SEGMENTS = [
  ['weights_bytes', 'weights'], ['kv_cache_bytes', 'KV cache'],
  ['activation_bytes', 'activations'], ['overhead_bytes', 'engine overhead'],
];

const state = {
  meta: null, hardware: [], models: [], devices: DEFAULT_DEVICES.slice(), flash: true,
  chart: 'roofline', config: null, generation: 0, controller: null, chartUrl: null,
  timer: null, shown: null, numbersShown: null,
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

// ---- numbers for people (GB = 1e9 bytes)

function fmtSeconds(s) {
  if (!Number.isFinite(s)) return '–';
  if (s === 0) return '0 s';
  if (s < 1e-3) return `${(s * 1e6).toPrecision(3)} µs`;
  if (s < 1) return `${(s * 1e3).toPrecision(3)} ms`;
  if (s < 600) return `${s.toPrecision(3)} s`;
  return `${(s / 60).toPrecision(3)} min`;
}
const fmtRate = (x) => (!Number.isFinite(x) ? '–' : x >= 100 ? x.toFixed(0) : x.toFixed(1));
const fmtGb = (b) => `${(b / 1e9).toFixed(b >= 1e11 ? 0 : 1)} GB`;
const fmtParams = (n) => (n >= 1e9 ? `${(n / 1e9).toFixed(1)}B` : `${(n / 1e6).toFixed(0)}M`);

// ---- the API

class ApiError extends Error {}

async function call(path, params, signal) {
  const init = { signal };
  if (state.config) {
    init.method = 'POST';
    init.body = state.config;
    init.headers = { 'Content-Type': 'application/json' };
  }
  const r = await fetch(`${path}?${params}`, init);
  if (!r.ok) {
    let message = `${r.status} ${r.statusText}`;
    try { message = (await r.json()).error; } catch (_) { /* not JSON */ }
    throw new ApiError(message);
  }
  return r;
}

/// The query of the form's flags for `gpu` (one id or a comma-separated list).
function query(gpu) {
  const p = new URLSearchParams();
  for (const [name, fallback] of Object.entries(FIELDS)) {
    const v = $(name).value.trim();
    if (name === 'model') {
      if (!state.config) p.set('model', v);
    } else if (v !== '' && v !== fallback) {
      p.set(name, v);
    }
    if (name === 'model') p.set('gpu', gpu);
  }
  if (!state.flash) p.set('no-flash', 'true');
  return p;
}

// ---- the URL: every flag that differs from its default, the devices and the chart

function writeUrl() {
  const p = query(state.devices.join(','));
  if (state.config) p.set('model', 'pasted');
  if (state.chart !== 'roofline') p.set('chart', state.chart);
  const qs = p.toString();
  history.replaceState(null, '', qs ? `?${qs}` : location.pathname);
}

function readUrl() {
  const p = new URLSearchParams(location.search);
  for (const name of Object.keys(FIELDS)) {
    if (!p.has(name)) continue;
    const field = $(name);
    const v = p.get(name);
    if (field.tagName === 'SELECT' && ![...field.options].some((o) => o.value === v)) {
      field.append(el('option', { value: v, text: v })); // e.g. bpw:4.0: the server checks it
    }
    field.value = v;
  }
  if (p.get('model') === 'pasted') {
    state.config = sessionStorage.getItem('ridgeline-config');
    $('model').value = state.config ? 'pasted config.json' : FIELDS.model;
    if (state.config) $('config-text').value = state.config;
  }
  if (p.has('gpu')) {
    const list = p.get('gpu').split(',').map((s) => s.trim()).filter(Boolean);
    if (list.length) state.devices = list.slice(0, MAX_DEVICES);
  }
  state.flash = !['true', '1', 'on', 'yes', ''].includes((p.get('no-flash') ?? 'false').toLowerCase());
  $('flash').checked = state.flash;
  if (CHARTS.includes(p.get('chart'))) state.chart = p.get('chart');
}

// ---- the controls

function hardwareOptions(select, value) {
  const byVendor = new Map();
  for (const h of state.hardware) {
    if (!byVendor.has(h.vendor)) byVendor.set(h.vendor, []);
    byVendor.get(h.vendor).push(h);
  }
  for (const [vendor, list] of byVendor) {
    const group = el('optgroup', { label: vendor });
    for (const h of list) {
      group.append(el('option', { value: h.id, text: h.name }));
    }
    select.append(group);
  }
  if (!state.hardware.some((h) => h.id === value)) {
    select.prepend(el('option', { value, text: value })); // an alias: the server resolves it
  }
  select.value = value;
}

function renderDevices() {
  const list = $('devices');
  list.replaceChildren();
  state.devices.forEach((id, i) => {
    const swatch = el('span', { class: 'swatch', 'aria-hidden': 'true' });
    swatch.style.background = state.meta.series_colors[i % state.meta.series_colors.length];
    const select = el('select', { id: `gpu-${i}`, 'aria-label': `Device ${i + 1}` });
    hardwareOptions(select, id);
    select.addEventListener('change', () => { state.devices[i] = select.value; schedule(); });
    const item = el('li', {}, swatch, select);
    if (state.devices.length > 1) {
      const remove = el('button', { type: 'button', class: 'remove', 'aria-label': `Remove device ${i + 1}`, text: '×' });
      remove.addEventListener('click', () => {
        state.devices.splice(i, 1);
        renderDevices();
        schedule();
        $(`gpu-${Math.min(i, state.devices.length - 1)}`).focus();
      });
      item.append(remove);
    }
    list.append(item);
  });
  $('device-add').disabled = state.devices.length >= MAX_DEVICES;
}

function addDevice() {
  if (state.devices.length >= MAX_DEVICES) return;
  const next = state.hardware.find((h) => !state.devices.includes(h.id) && h.price_usd_per_hour);
  state.devices.push(next ? next.id : state.hardware[0].id);
  renderDevices();
  $(`gpu-${state.devices.length - 1}`).focus();
  schedule();
}

function fillMenus() {
  const models = $('model-list');
  for (const m of state.models) {
    models.append(el('option', { value: m.id, label: `${m.name} · ${fmtParams(m.params)}` }));
  }
  for (const id of ['weights', 'kv', 'expert-weights']) {
    for (const f of state.meta.formats) $(id).append(el('option', { value: f, text: f }));
  }
  $('engine').replaceChildren(...state.meta.engines.map((e) => el('option', { value: e, text: e })));
  $('engine').value = FIELDS.engine;
  $('version').textContent = `version ${state.meta.version}`;
  const legend = $('memory-legend');
  SEGMENTS.forEach(([, name], i) => {
    const sw = el('span', { class: 'swatch', 'aria-hidden': 'true' });
    sw.style.background = state.meta.segment_colors[i];
    legend.append(el('span', { class: 'key' }, sw, name));
  });
  legend.append(el('span', { class: 'key' }, el('span', { class: 'cap', 'aria-hidden': 'true' }), 'capacity'));
}

function modelInfo() {
  const id = $('model').value.trim().toLowerCase();
  const m = state.models.find((x) => x.id === id);
  $('model-info').textContent = state.config ? 'A pasted config.json (sent with each request).'
    : m ? `${m.name}: ${fmtParams(m.params)} parameters${m.active_params < m.params ? `, ${fmtParams(m.active_params)} active` : ''}, ${m.layers} layers`
      : 'Not a bundled model id: pick one from the list.';
}

// ---- the results

function memoryBar(mem) {
  const scale = Math.max(mem.total_bytes, mem.capacity_bytes);
  const bar = el('div', { class: 'bar', role: 'img' });
  const parts = [];
  SEGMENTS.forEach(([key, name], i) => {
    const seg = el('span', { class: 'seg' });
    seg.style.width = `${(100 * mem[key]) / scale}%`;
    seg.style.background = state.meta.segment_colors[i];
    bar.append(seg);
    parts.push(`${name} ${fmtGb(mem[key])}`);
  });
  const cap = el('span', { class: 'capacity' });
  cap.style.left = `${(100 * mem.capacity_bytes) / scale}%`;
  bar.append(cap);
  bar.setAttribute('aria-label', `${fmtGb(mem.total_bytes)} of ${fmtGb(mem.capacity_bytes)}: ${parts.join(', ')}`);
  bar.title = parts.join(' + ');
  const verdict = el('span', { class: mem.fits ? 'fits ok' : 'fits bad', text: mem.fits ? 'fits' : 'does not fit' });
  const text = el('span', { class: 'memtext' }, verdict, ` ${fmtGb(mem.total_bytes)} of ${fmtGb(mem.capacity_bytes)}`);
  return el('div', { class: 'memory' }, bar, text);
}

function renderRows(preds) {
  const rows = preds.map((p, i) => {
    const swatch = el('span', { class: 'swatch', 'aria-hidden': 'true' });
    swatch.style.background = state.meta.series_colors[i % state.meta.series_colors.length];
    const g = p.generation;
    const count = p.hardware.count > 1 ? `${p.hardware.count} × ` : '';
    const cell = (cls, text) => el('td', { class: `n ${cls}`, text });
    const binds = el('td', { class: 'binds' });
    if (p.config.prompt > 0) binds.append(el('span', { text: `prefill: ${p.prefill.bound}` }), el('br'));
    binds.append(el('span', { text: `decode: ${p.decode.bound}` }));
    return el('tr', { 'data-gpu': p.hardware.id },
      el('th', { scope: 'row' }, swatch, `${count}${p.hardware.name}`),
      el('td', {}, memoryBar(p.memory)),
      cell('ttft', p.config.prompt > 0 ? fmtSeconds(g.ttft_s) : '–'),
      cell('tpot', p.config.gen > 0 ? fmtSeconds(g.tpot_s) : '–'),
      cell('decode', fmtRate(g.decode_tokens_per_s)),
      cell('output', fmtRate(g.output_tokens_per_s)),
      binds);
  });
  $('rows').replaceChildren(...rows);
}

function renderExplain(e) {
  $('explain-headline').textContent = e.headline;
  $('findings').replaceChildren(...e.findings.map((f) => el('li', {}, el('span', { class: 'topic', text: f.topic }), el('span', { text: f.text }))));
}

function chartQuery(chart) {
  return query(chart === 'memory' ? state.devices[0] : state.devices.join(','));
}

async function renderChart(signal, generation) {
  const chart = state.chart;
  const q = chartQuery(chart);
  const r = await call(`/api/${chart}.svg`, q, signal);
  const svg = await r.text();
  if (generation !== state.generation) return;
  const img = $('chart');
  if (state.chartUrl) URL.revokeObjectURL(state.chartUrl);
  state.chartUrl = URL.createObjectURL(new Blob([svg], { type: 'image/svg+xml' }));
  img.src = state.chartUrl;
  img.dataset.query = `/api/${chart}.svg?${q}`;
  img.dataset.bytes = String(svg.length);
  const names = { roofline: 'Roofline', throughput: 'Decode throughput and latency against batch', memory: 'Memory per device by weight format' };
  img.alt = `${names[chart]} chart for ${state.config ? 'the pasted model' : $('model').value} on ${chart === 'memory' ? state.devices[0] : state.devices.join(', ')}`;
  // ready means drawn: wait for the image (a newer chart replacing it rejects: fine)
  await img.decode().catch(() => {});
}

// ---- errors: the message, and the fields it names marked

function showError(message) {
  const box = $('error');
  box.textContent = message;
  box.hidden = false;
  document.querySelectorAll('[aria-invalid]').forEach((e) => e.removeAttribute('aria-invalid'));
  for (const [, flag] of message.matchAll(/--([a-z][a-z-]*)/g)) {
    const target = flag === 'gpu' ? $('gpu-0') : flag === 'no-flash' ? $('flash') : $(flag);
    if (target) target.setAttribute('aria-invalid', 'true');
  }
}

function clearError() {
  $('error').hidden = true;
  document.querySelectorAll('[aria-invalid]').forEach((e) => e.removeAttribute('aria-invalid'));
}

// ---- updating

function schedule(delay = 250) {
  clearTimeout(state.timer);
  state.timer = setTimeout(update, delay);
}

async function renderNumbers(signal, generation) {
  const json = (path, q) => call(path, q, signal).then((r) => r.json());
  const [explain, ...preds] = await Promise.all([
    json('/api/explain', query(state.devices[0])),
    ...state.devices.map((d) => json('/api/predict', query(d))),
  ]);
  if (generation !== state.generation) return;
  renderRows(preds);
  renderExplain(explain);
}

// what the view shows (or is loading): an update for the same is skipped, such as the
// change event a field fires when it loses focus after typing
function viewKey() {
  return `${query(state.devices.join(','))}|${state.chart}|${state.config ?? ''}`;
}

async function update() {
  const key = viewKey();
  if (key === state.shown) return;
  state.shown = key;
  // the numbers do not depend on the chart: a new tab asks for its chart only
  const numbers = key.slice(0, key.indexOf('|')) + (state.config ?? '');
  const chartOnly = numbers === state.numbersShown;
  const generation = ++state.generation;
  if (state.controller) state.controller.abort();
  const controller = new AbortController();
  state.controller = controller;
  const { signal } = controller;
  writeUrl();
  modelInfo();
  commandLine();
  $('busy').hidden = false;
  document.body.dataset.state = 'loading';
  try {
    // Promise.all handles every rejection (an aborted chart and aborted numbers too)
    const work = [renderChart(signal, generation)];
    if (!chartOnly) work.push(renderNumbers(signal, generation));
    await Promise.all(work);
    if (generation !== state.generation) return;
    state.numbersShown = numbers;
    clearError();
    document.body.dataset.state = 'ready';
    document.body.dataset.rendered = String(Number(document.body.dataset.rendered || 0) + 1);
  } catch (e) {
    if (e.name === 'AbortError' || generation !== state.generation) return;
    state.shown = null; // asking again may succeed
    state.numbersShown = null;
    showError(e instanceof ApiError ? e.message : `The server did not answer: ${e.message}`);
    document.body.dataset.state = 'error';
  } finally {
    if (generation === state.generation) $('busy').hidden = true;
  }
}

function commandLine() {
  const p = query(state.devices[0]);
  const words = ['ridgeline', 'predict'];
  for (const [k, v] of p) {
    words.push(`--${k}`);
    if (k !== 'no-flash') words.push(/^[\w.,:+@/-]+$/.test(v) ? v : `'${v.replace(/'/g, "'\\''")}'`);
  }
  if (state.config) words.splice(2, 0, '--model', 'config.json');
  $('command').textContent = words.join(' ');
}

// ---- downloads: the answers as files

function save(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = el('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

async function download(path, params, name) {
  try {
    save(await (await call(path, params)).blob(), name);
  } catch (e) {
    showError(e.message);
  }
}

// the launch files of the first device's configuration (`--emit FORMAT`): each file of
// the answer saved under its own name
const LAUNCH = ['vllm', 'sglang', 'trt-llm', 'llama.cpp', 'k8s'];

async function downloadLaunch(format) {
  try {
    const p = query(state.devices[0]);
    p.set('emit', format);
    const doc = await (await call('/api/predict', p)).json();
    for (const f of doc.files) save(new Blob([f.contents], { type: 'text/plain' }), f.name);
  } catch (e) {
    showError(e.message);
  }
}

function renderDownloads() {
  const box = $('downloads');
  const button = (label, onClick) => {
    const b = el('button', { type: 'button', text: label });
    b.addEventListener('click', onClick);
    return b;
  };
  box.replaceChildren(
    button('predict.json (each device)', () => state.devices.forEach((d) => download('/api/predict', query(d), `predict-${d}.json`))),
    button('explain.json', () => download('/api/explain', query(state.devices[0]), 'explain.json')),
    ...CHARTS.map((c) => button(`${c}.svg`, () => download(`/api/${c}.svg`, chartQuery(c), `${c}.svg`))),
    ...LAUNCH.map((f) => button(`launch: ${f}`, () => downloadLaunch(f))),
  );
}

// ---- chart tabs: arrows, Home and End move between them

function selectTab(chart, focus) {
  state.chart = chart;
  for (const tab of document.querySelectorAll('[role=tab]')) {
    const on = tab.dataset.chart === chart;
    tab.setAttribute('aria-selected', String(on));
    tab.tabIndex = on ? 0 : -1;
    if (on) {
      $('chart-panel').setAttribute('aria-labelledby', tab.id);
      if (focus) tab.focus();
    }
  }
}

function wireTabs() {
  const tabs = [...document.querySelectorAll('[role=tab]')];
  tabs.forEach((tab, i) => {
    tab.addEventListener('click', () => { selectTab(tab.dataset.chart, false); update(); });
    tab.addEventListener('keydown', (e) => {
      const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
      if (to === undefined) return;
      e.preventDefault();
      const next = tabs[(to + tabs.length) % tabs.length];
      selectTab(next.dataset.chart, true);
      update();
    });
  });
}

function wireForm() {
  for (const name of Object.keys(FIELDS)) {
    $(name).addEventListener('input', () => schedule());
    $(name).addEventListener('change', () => schedule(0));
  }
  $('flash').addEventListener('change', () => { state.flash = $('flash').checked; schedule(0); });
  $('device-add').addEventListener('click', addDevice);
  $('controls').addEventListener('submit', (e) => { e.preventDefault(); schedule(0); });
  $('config-use').addEventListener('click', () => {
    const text = $('config-text').value.trim();
    try {
      JSON.parse(text);
    } catch (e) {
      showError(`The pasted config.json is not JSON: ${e.message}`);
      return;
    }
    state.config = text;
    sessionStorage.setItem('ridgeline-config', text);
    $('model').value = 'pasted config.json';
    $('model').disabled = true;
    schedule(0);
  });
  $('config-clear').addEventListener('click', () => {
    state.config = null;
    sessionStorage.removeItem('ridgeline-config');
    $('model').disabled = false;
    $('model').value = FIELDS.model;
    schedule(0);
  });
}

async function start() {
  try {
    const [meta, hardware, models] = await Promise.all(['/api/meta', '/api/hardware', '/api/models']
      .map((u) => fetch(u).then((r) => { if (!r.ok) throw new Error(`${u}: ${r.status}`); return r.json(); })));
    Object.assign(state, { meta, hardware, models });
  } catch (e) {
    showError(`The page could not reach the ridgeline server: ${e.message}`);
    document.body.dataset.state = 'error';
    return;
  }
  fillMenus();
  readUrl();
  $('model').disabled = Boolean(state.config);
  renderDevices();
  selectTab(state.chart, false);
  wireTabs();
  wireForm();
  renderDownloads();
  update();
}

start();
