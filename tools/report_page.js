// report_page.js — draws ./inspect report's page from the JSON in <script id="data"> (written by
// tools/inspect_report.c). Plain JavaScript, no library, no request: canvases and inline SVG.
// The Makefile turns this file into a C string (build/.../report_page_js.c). The URL fragment
// #test runs the interactive parts (slider, patch click) and writes checksums of what they drew
// into <pre id="test-result"> (tests/test_report.c reads it with chromium --dump-dom).
'use strict';
(function () {
  const errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); });
  const D = JSON.parse(document.getElementById('data').textContent);
  const C = D.cfg, names = D.class_names, K = C.classes, N = C.gh * C.gw, S = C.prefix, T = N + S;
  const L = C.depth, H = C.heads, snaps = D.snaps;
  let cur = snaps.length - 1, img = 0, query = -1, metric = 'r';

  // ---------------------------------------------------------------- helpers
  function b64(s) { const b = atob(s), a = new Uint8Array(b.length); for (let i = 0; i < b.length; i++) a[i] = b.charCodeAt(i); return a; }
  function el(tag, parent, attrs, text) {
    const e = document.createElement(tag);
    if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  const SVGNS = 'http://www.w3.org/2000/svg';
  function sv(tag, parent, attrs) {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    parent.appendChild(e);
    return e;
  }
  const VIR = [[68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141], [39, 173, 129], [92, 200, 99], [170, 220, 50], [253, 231, 37]];
  function viridis(t) {
    t = Math.max(0, Math.min(1, t)) * 8;
    const i = Math.min(7, Math.floor(t)), f = t - i, a = VIR[i], b = VIR[i + 1];
    return [a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f];
  }
  function fmt(v) { const a = Math.abs(v); return a === 0 ? '0' : a < 0.01 || a >= 1e4 ? v.toExponential(1) : String(Number(v.toPrecision(3))); }
  function rgb(c) { return 'rgb(' + Math.round(c[0]) + ',' + Math.round(c[1]) + ',' + Math.round(c[2]) + ')'; }
  const PAL = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
  function classColour(k) { return k < 10 ? PAL[k] : 'hsl(' + ((k * 137.5) % 360) + ',65%,45%)'; }
  function cname(k) { return names[k] !== undefined ? names[k] : 'class ' + k; }
  function canvas(parent, w, h, cap) {
    const box = el('div', parent);
    const c = el('canvas', box, { width: w, height: h });
    if (cap) el('div', box, { class: 'cap' }, cap);
    return c;
  }
  // a (C, S, S) uint8 image onto ctx at (x0, y0), each pixel zoom x zoom; gray: mix for heat overlays
  function putImage(ctx, px, x0, y0, zoom, gray) {
    const S2 = C.img, hw = S2 * S2, d = ctx.createImageData(S2 * zoom, S2 * zoom);
    for (let y = 0; y < S2 * zoom; y++) for (let x = 0; x < S2 * zoom; x++) {
      const o = Math.floor(y / zoom) * S2 + Math.floor(x / zoom), k = (y * S2 * zoom + x) * 4;
      let r = px[o], g = C.chans >= 3 ? px[hw + o] : r, b = C.chans >= 3 ? px[2 * hw + o] : r;
      if (gray) { const v = (r * 30 + g * 59 + b * 11) / 100; r = g = b = v; }
      d.data[k] = r; d.data[k + 1] = g; d.data[k + 2] = b; d.data[k + 3] = 255;
    }
    ctx.putImageData(d, x0, y0);
  }
  // values over the patch grid (N), scaled to their max (at least 4x uniform), blended over the image
  function heat(ctx, px, v, x0, y0, zoom) {
    putImage(ctx, px, x0, y0, zoom, true);
    let mx = 4 / N;
    for (let k = 0; k < N; k++) mx = Math.max(mx, v[k]);
    const cw = C.img * zoom / C.gw, ch = C.img * zoom / C.gh;
    for (let k = 0; k < N; k++) {
      ctx.fillStyle = rgb(viridis(v[k] / mx));
      ctx.globalAlpha = 0.7;
      ctx.fillRect(x0 + (k % C.gw) * cw, y0 + Math.floor(k / C.gw) * ch, Math.ceil(cw), Math.ceil(ch));
      ctx.globalAlpha = 1;
    }
  }
  function zoomFor(target) { return Math.max(1, Math.round(target / C.img)); }
  const tip = document.getElementById('tip');
  function showTip(e, text) { tip.style.display = 'block'; tip.textContent = text; tip.style.left = (e.clientX + 12) + 'px'; tip.style.top = (e.clientY + 12) + 'px'; }
  function hideTip() { tip.style.display = 'none'; }
  function snapLabel(s) { const st = snaps[s].step; return st < 0 ? 'final model' : 'step ' + st; }

  // a line chart in SVG: series [{name, colour, pts: [[x, y]...], dash}], vertical marks, hover values
  function chart(parent, title, series, opt) {
    const W = opt.w || 340, Ht = opt.h || 200, ml = 48, mr = 10, mt = 18, mb = 28;
    const box = el('div', parent);
    const s = document.createElementNS(SVGNS, 'svg');
    s.setAttribute('width', W); s.setAttribute('height', Ht); box.appendChild(s);
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    const fy = opt.log ? function (v) { return Math.log10(v); } : function (v) { return v; };
    for (const se of series) for (const p of se.pts) {
      if (p[1] === null || !isFinite(fy(p[1]))) continue;
      x0 = Math.min(x0, p[0]); x1 = Math.max(x1, p[0]); y0 = Math.min(y0, fy(p[1])); y1 = Math.max(y1, fy(p[1]));
    }
    if (!isFinite(x0)) { sv('text', s, { x: 10, y: 20 }).textContent = title + ': no data'; return box; }
    if (x1 === x0) x1 = x0 + 1;
    if (y1 === y0) { y1 += 0.5; y0 -= 0.5; }
    const X = function (x) { return ml + (x - x0) / (x1 - x0) * (W - ml - mr); };
    const Y = function (y) { return mt + (1 - (fy(y) - y0) / (y1 - y0)) * (Ht - mt - mb); };
    sv('text', s, { x: 4, y: 12, 'font-size': 12, 'font-weight': 'bold' }).textContent = title;
    sv('rect', s, { x: ml, y: mt, width: W - ml - mr, height: Ht - mt - mb, fill: 'none', stroke: '#ccc' });
    for (let i = 0; i <= 2; i++) {
      const v = y0 + (y1 - y0) * i / 2, lab = opt.log ? Math.pow(10, v).toExponential(0) : fmt(v);
      sv('text', s, { x: ml - 4, y: mt + (1 - i / 2) * (Ht - mt - mb) + 4, 'font-size': 10, 'text-anchor': 'end' }).textContent = lab;
    }
    sv('text', s, { x: ml, y: Ht - 8, 'font-size': 10 }).textContent = String(x0);
    sv('text', s, { x: W - mr, y: Ht - 8, 'font-size': 10, 'text-anchor': 'end' }).textContent = String(x1) + (opt.xlabel ? ' ' + opt.xlabel : '');
    for (const m of (opt.marks || [])) if (m >= x0 && m <= x1)
      sv('line', s, { x1: X(m), x2: X(m), y1: mt, y2: Ht - mb, stroke: '#999', 'stroke-dasharray': '3,3' });
    for (const se of series) {
      let d = '';
      for (const p of se.pts) if (p[1] !== null && isFinite(fy(p[1]))) d += (d ? 'L' : 'M') + X(p[0]).toFixed(1) + ',' + Y(p[1]).toFixed(1);
      const path = sv('path', s, { d: d, fill: 'none', stroke: se.colour, 'stroke-width': se.width || 1.5, 'stroke-dasharray': se.dash || '' });
      if (se.name) path.addEventListener('mousemove', function (e) { showTip(e, se.name); });
      path.addEventListener('mouseleave', hideTip);
      if (se.dots) for (const p of se.pts) sv('circle', s, { cx: X(p[0]), cy: Y(p[1]), r: 2.5, fill: se.colour });
    }
    const cursor = sv('line', s, { x1: 0, x2: 0, y1: mt, y2: Ht - mb, stroke: '#333', visibility: 'hidden' });
    s.addEventListener('mousemove', function (e) {
      const r = s.getBoundingClientRect(), x = x0 + (e.clientX - r.left - ml) / (W - ml - mr) * (x1 - x0);
      if (e.target.tagName === 'path' && series.length > 6) return;
      let text = (opt.xlabel || 'x') + ' ' + Math.round(x);
      for (const se of series.slice(0, 6)) {
        let best = null;
        for (const p of se.pts) if (best === null || Math.abs(p[0] - x) < Math.abs(best[0] - x)) best = p;
        if (best && best[1] !== null) text += ' | ' + se.name + ' ' + Number(best[1]).toPrecision(4) + ' (at ' + best[0] + ')';
      }
      cursor.setAttribute('x1', X(Math.max(x0, Math.min(x1, x)))); cursor.setAttribute('x2', X(Math.max(x0, Math.min(x1, x))));
      cursor.setAttribute('visibility', 'visible');
      showTip(e, text);
    });
    s.addEventListener('mouseleave', function () { cursor.setAttribute('visibility', 'hidden'); hideTip(); });
    if (opt.legend) {
      const lg = el('div', box, { class: 'cap' });
      for (const se of series.slice(0, 8)) { const sp = el('span', lg, { style: 'color:' + se.colour + ';margin-right:8px' }, '\u25a0 ' + se.name); sp.title = se.name; }
    }
    return box;
  }
  function bars(parent, title, values, labels, colour, opt) {
    opt = opt || {};
    const box = el('div', parent, { style: 'min-width:220px' });
    el('div', box, { class: 'cap', style: 'font-weight:bold;text-align:left' }, title);
    const mx = opt.max || Math.max.apply(null, values.map(Math.abs).concat([1e-9]));
    for (let i = 0; i < values.length && i < 40; i++) {
      const r = el('div', box, { style: 'display:flex;align-items:center;font-size:11px;height:15px' });
      el('span', r, { style: 'width:90px;overflow:hidden;white-space:nowrap' }, labels[i]);
      const w = Math.abs(values[i]) / mx * 120;
      el('span', r, { style: 'display:inline-block;height:10px;width:' + w.toFixed(1) + 'px;background:' + (typeof colour === 'function' ? colour(i) : colour) });
      el('span', r, { style: 'margin-left:4px' }, opt.pct ? (100 * values[i]).toFixed(1) + '%' : Number(values[i]).toPrecision(3));
    }
    return box;
  }
  const snapSteps = snaps.map(function (s) { return s.step; }).filter(function (s) { return s >= 0; });

  // ---------------------------------------------------------------- 2. end to end
  function drawE2E() {
    const v = document.getElementById('e2e-view'), E = D.e2e, px = b64(E.px), z = zoomFor(128);
    const row = el('div', v, { class: 'row' });
    let c = canvas(row, C.img * z, C.img * z, 'pixels (' + C.chans + ', ' + C.img + ', ' + C.img + ')');
    putImage(c.getContext('2d'), px, 0, 0, z, false);
    c = canvas(row, C.img * z, C.img * z, (C.stem !== 'none' ? 'stem ' + C.stem + ', then ' : '') + C.gh + 'x' + C.gw + ' patches of ' + C.patch + ' px: (' + N + ', ' + (C.chans * C.patch * C.patch) + ')');
    let ctx = c.getContext('2d');
    putImage(ctx, px, 0, 0, z, false);
    ctx.strokeStyle = '#ffdc00';
    for (let k = 0; k <= C.gw; k++) { ctx.beginPath(); ctx.moveTo(k * C.img * z / C.gw, 0); ctx.lineTo(k * C.img * z / C.gw, C.img * z); ctx.stroke(); }
    for (let k = 0; k <= C.gh; k++) { ctx.beginPath(); ctx.moveTo(0, k * C.img * z / C.gh); ctx.lineTo(C.img * z, k * C.img * z / C.gh); ctx.stroke(); }
    for (let l = 0; l <= L; l++) {
      const v2 = [];
      for (let k = 0; k < N; k++) v2.push(E.tokens[l * T + S + k]);
      const cap = (l === 0 ? 'tokens' + (S ? ' + ' + (C.cls ? 'class token' : '') + (C.reg ? ' + ' + C.reg + ' registers' : '') : '') + ' + positions' : 'after block ' + (l - 1)) + ': (' + T + ', ' + C.dim + ')';
      c = canvas(row, 96, 96, cap);
      ctx = c.getContext('2d');
      let mx = 1e-9, mn = Infinity;
      for (const x of v2) { mx = Math.max(mx, x); mn = Math.min(mn, x); }
      for (let k = 0; k < N; k++) { ctx.fillStyle = rgb(viridis((v2[k] - mn) / (mx - mn + 1e-9))); ctx.fillRect((k % C.gw) * 96 / C.gw, Math.floor(k / C.gw) * 96 / C.gh, Math.ceil(96 / C.gw), Math.ceil(96 / C.gh)); }
    }
    const row2 = el('div', v, { class: 'row' });
    c = canvas(row2, 256, 24, 'pooled feature (' + C.dim + ',): ' + (C.pool === 'cls' ? 'the class token' : C.pool === 'seq' ? 'sequence pooling of the patch tokens' : 'mean of the patch tokens') + ' after the final norm');
    ctx = c.getContext('2d');
    let mx = 1e-9;
    for (const x of E.pooled) mx = Math.max(mx, Math.abs(x));
    for (let k = 0; k < C.dim; k++) { ctx.fillStyle = rgb(viridis(0.5 + E.pooled[k] / mx / 2)); ctx.fillRect(k * 256 / C.dim, 0, Math.ceil(256 / C.dim), 24); }
    const order = E.probs.map(function (p, k) { return k; }).sort(function (a, b) { return E.probs[b] - E.probs[a]; }).slice(0, 10);
    bars(row2, 'logits (' + K + ',)', order.map(function (k) { return E.logits[k]; }), order.map(cname), '#6a8fd0');
    bars(row2, 'probabilities (softmax): true class ' + cname(E.label), order.map(function (k) { return E.probs[k]; }), order.map(cname),
      function (i) { return order[i] === E.label ? '#2ca02c' : '#d62728'; }, { pct: true, max: 1 });
  }

  // ---------------------------------------------------------------- 3. curves
  function drawCurves() {
    const v = document.getElementById('curves-view');
    const tr = D.train, ev = D.eval;
    chart(v, 'loss', [{ name: 'train loss', colour: '#1f77b4', pts: tr.map(function (r) { return [r[0], r[1]]; }) },
      { name: 'test loss', colour: '#d62728', pts: ev.map(function (r) { return [r[0], r[1]]; }), dots: true }], { marks: snapSteps, xlabel: 'step', legend: true });
    chart(v, 'accuracy', [{ name: 'train top-1', colour: '#1f77b4', pts: tr.map(function (r) { return [r[0], r[3]]; }) },
      { name: 'test top-1', colour: '#d62728', pts: ev.map(function (r) { return [r[0], r[2]]; }), dots: true }], { marks: snapSteps, xlabel: 'step', legend: true });
    chart(v, 'learning rate', [{ name: 'lr', colour: '#2ca02c', pts: tr.map(function (r) { return [r[0], r[2]]; }) }], { marks: snapSteps, xlabel: 'step', legend: true });
  }

  // ---------------------------------------------------------------- 4. attention
  const attCache = {};
  function attOf(s, i) {
    const a = snaps[s].att;
    if (!a || !a[i]) return null;
    const key = s + ':' + i;
    if (!attCache[key]) { const q = b64(a[i]), f = new Float32Array(q.length); for (let k = 0; k < q.length; k++) { const x = q[k] / 255; f[k] = x * x; } attCache[key] = f; }
    return attCache[key];
  }
  // the weight of patch query r in what the head reads: 1/N (mean pooling), or the image's sequence
  // pooling weights at this snapshot
  function poolWeight(r) {
    const pw = snaps[cur].pw;
    return C.pool === 'seq' && pw && pw[img] ? pw[img][r] : 1 / N;
  }
  // the patch part of the row a head reads: the clicked patch's row, else the class token's (CLS
  // pooling) or the patch rows weighted as the pooling weighs them (mean and sequence pooling)
  function readRow(A, l, h, q) {
    const base = (l * H + h) * T * T, v = new Float64Array(N);
    if (q >= 0) { for (let k = 0; k < N; k++) v[k] = A[base + (S + q) * T + S + k]; return v; }
    if (C.pool === 'cls' && C.cls) { for (let k = 0; k < N; k++) v[k] = A[base + S + k]; return v; }
    for (let r = S; r < T; r++) { const w = poolWeight(r - S); for (let k = 0; k < N; k++) v[k] += A[base + r * T + S + k] * w; }
    return v;
  }
  let attGrid = null;
  function drawAttention() {
    const v = document.getElementById('att-view');
    v.textContent = '';
    const imgs = D.att_images;
    const sel = el('div', v);
    el('span', sel, null, 'image: ');
    imgs.forEach(function (im, i) {
      const b = el('button', sel, i === img ? { class: 'sel' } : null, '#' + i + ' ' + cname(im.label));
      b.onclick = function () { img = i; query = -1; drawAttention(); };
    });
    const bq = el('button', sel, null, 'back to what the classifier reads');
    bq.onclick = function () { query = -1; drawAttention(); };
    const row = el('div', v, { class: 'row' });
    const px = b64(imgs[img].px), zb = zoomFor(192);
    const big = canvas(row, C.img * zb, C.img * zb, 'click a patch');
    const bctx = big.getContext('2d');
    putImage(bctx, px, 0, 0, zb, false);
    if (query >= 0) { bctx.strokeStyle = '#ff0000'; bctx.lineWidth = 2; bctx.strokeRect((query % C.gw) * C.img * zb / C.gw, Math.floor(query / C.gw) * C.img * zb / C.gh, C.img * zb / C.gw, C.img * zb / C.gh); }
    big.onclick = function (e) {
      const r = big.getBoundingClientRect();
      selectPatch(Math.floor((e.clientY - r.top) / (C.img * zb / C.gh)) * C.gw + Math.floor((e.clientX - r.left) / (C.img * zb / C.gw)));
    };
    const A = attOf(cur, img);
    const what = query >= 0 ? 'where patch (' + Math.floor(query / C.gw) + ', ' + (query % C.gw) + ') attends' :
      (C.pool === 'cls' && C.cls ? 'class-token attention (the token the classifier reads)' :
       C.pool === 'seq' ? 'attention of the patch queries weighted by sequence pooling (what the classifier reads)' :
       'mean attention over the patch queries (the classifier reads the mean of the patch tokens)');
    if (!A) {
      el('p', v, { class: 'none' }, 'The attention maps of ' + snapLabel(cur) + ' were not stored (the page keeps its size under a few MB): move the slider to a marked snapshot.');
      attGrid = null;
    } else {
      const z = zoomFor(64), cell = C.img * z, gap = 4, lw = 22;
      attGrid = canvas(row, lw + H * (cell + gap) + cell + gap, 16 + L * (cell + gap), what + '; last column: rollout up to that layer (' + snapLabel(cur) + ')');
      const ctx = attGrid.getContext('2d');
      ctx.font = '11px sans-serif'; ctx.fillStyle = '#000';
      for (let h = 0; h < H; h++) ctx.fillText('head ' + h, lw + h * (cell + gap), 11);
      ctx.fillText('rollout', lw + H * (cell + gap), 11);
      for (let l = 0; l < L; l++) {
        ctx.fillStyle = '#000'; ctx.fillText('L' + l, 0, 16 + l * (cell + gap) + cell / 2);
        for (let h = 0; h < H; h++) heat(ctx, px, readRow(A, l, h, query), lw + h * (cell + gap), 16 + l * (cell + gap), z);
      }
      const ro = rolloutAll(A, query);
      for (let l = 0; l < L; l++) heat(ctx, px, ro[l], lw + H * (cell + gap), 16 + l * (cell + gap), z);
    }
    // mean attention distance per head and layer (this snapshot), the ViT paper's figure
    const md = snaps[cur].mad, series = [];
    for (let h = 0; h < H; h++) series.push({ name: 'head ' + h, colour: classColour(h), width: 0.01, dots: true, pts: Array.from({ length: L }, function (_, l) { return [l, md[l * H + h]]; }) });
    chart(row, 'mean attention distance (px)', series, { xlabel: 'layer', w: 300, h: 220 });
  }
  // attention rollout (Abnar and Zuidema 2020): per block the heads averaged plus the identity (the
  // residual path), rows renormalised, multiplied up; the row read (as readRow) after each block
  function rolloutAll(A, q) {
    let R = new Float64Array(T * T);
    const out = [];
    for (let i = 0; i < T; i++) R[i * T + i] = 1;
    for (let l = 0; l < L; l++) {
      const Ah = new Float64Array(T * T);
      for (let i = 0; i < T; i++) {
        let s = 0;
        for (let j = 0; j < T; j++) { let a = 0; for (let h = 0; h < H; h++) a += A[((l * H + h) * T + i) * T + j]; a = a / H + (i === j ? 1 : 0); Ah[i * T + j] = a; s += a; }
        for (let j = 0; j < T; j++) Ah[i * T + j] /= s;
      }
      const R2 = new Float64Array(T * T);
      for (let i = 0; i < T; i++) for (let k = 0; k < T; k++) { const a = Ah[i * T + k]; if (a) for (let j = 0; j < T; j++) R2[i * T + j] += a * R[k * T + j]; }
      R = R2;
      const v = new Float64Array(N);
      if (q >= 0) for (let k = 0; k < N; k++) v[k] = R[(S + q) * T + S + k];
      else if (C.pool === 'cls' && C.cls) for (let k = 0; k < N; k++) v[k] = R[S + k];
      else for (let r = S; r < T; r++) { const w = poolWeight(r - S); for (let k = 0; k < N; k++) v[k] += R[r * T + S + k] * w; }
      out.push(v);
    }
    return out;
  }
  function selectPatch(p) { query = p >= 0 && p < N ? p : -1; drawAttention(); }

  // ---------------------------------------------------------------- 5. embeddings
  function drawEmbeddings() {
    const v = document.getElementById('emb-view');
    v.textContent = '';
    const sn = snaps[cur], sim = b64(sn.pos);
    let lo = 255, hi = 0;                                  // colours stretched over the table's own range
    for (let k = 0; k < sim.length; k++) { lo = Math.min(lo, sim[k]); hi = Math.max(hi, sim[k]); }
    if (hi <= lo) hi = lo + 1;
    const cs = N <= 64 ? 4 : N <= 196 ? 2 : 1, mw = C.gw * cs, mh = C.gh * cs, gap = 2;
    const c = canvas(v, C.gw * (mw + gap), C.gh * (mh + gap), 'position-embedding cosine similarity, ' + snapLabel(cur) + ': the map at row i, column j compares patch (i, j) with every patch (colour ' + (lo / 127.5 - 1).toFixed(2) + ' .. ' + (hi / 127.5 - 1).toFixed(2) + ')');
    const ctx = c.getContext('2d');
    for (let a = 0; a < N; a++) for (let b = 0; b < N; b++) {
      ctx.fillStyle = rgb(viridis((sim[a * N + b] - lo) / (hi - lo)));
      ctx.fillRect((a % C.gw) * (mw + gap) + (b % C.gw) * cs, Math.floor(a / C.gw) * (mh + gap) + Math.floor(b / C.gw) * cs, cs, cs);
    }
    const F = sn.filters;
    if (F) {
      const fpx = b64(F.px), z = Math.max(2, Math.round(24 / F.k)), per = F.c * F.k * F.k, cols = Math.min(16, F.n);
      const fc = canvas(v, cols * (F.k * z + 2), Math.ceil(F.n / cols) * (F.k * z + 2), F.n + ' filters ' + F.k + 'x' + F.k + ' over ' + F.c + ' channel' + (F.c > 1 ? 's' : '') + ' (' + (C.stem !== 'none' ? 'first stem conv' : 'patch embedding') + '), ' + snapLabel(cur) + '; grey = 0');
      const fx = fc.getContext('2d');
      for (let f = 0; f < F.n; f++) for (let y = 0; y < F.k; y++) for (let x = 0; x < F.k; x++) {
        const o = f * per + y * F.k + x, r = fpx[o], g = F.c >= 3 ? fpx[o + F.k * F.k] : r, b = F.c >= 3 ? fpx[o + 2 * F.k * F.k] : r;
        fx.fillStyle = 'rgb(' + r + ',' + g + ',' + b + ')';
        fx.fillRect((f % cols) * (F.k * z + 2) + x * z, Math.floor(f / cols) * (F.k * z + 2) + y * z, z, z);
      }
    }
  }

  // ---------------------------------------------------------------- 6. predictions
  function drawPredictions() {
    const v = document.getElementById('pred-view'), P = D.pred;
    const row = el('div', v, { class: 'row' });
    bars(row, 'per-class accuracy (' + P.n + ' test images)', P.class_acc, names.map(function (n, k) { return cname(k); }), '#2ca02c', { pct: true, max: 1 });
    if (!P.confusion) el('p', row, { class: 'none' }, K + ' classes: the confusion matrix is left out of the page (its size)');
    else {
      const cell = Math.max(4, Math.min(24, Math.floor(300 / K)));
      const cm = canvas(row, K * cell, K * cell, 'confusion matrix: rows = true class, columns = predicted (hover)');
      const ctx = cm.getContext('2d');
      for (let y = 0; y < K; y++) {
        const n = P.confusion[y].reduce(function (a, b) { return a + b; }, 0) || 1;
        for (let x = 0; x < K; x++) { ctx.fillStyle = rgb(viridis(Math.sqrt(P.confusion[y][x] / n))); ctx.fillRect(x * cell, y * cell, cell, cell); }
      }
      cm.onmousemove = function (e) {
        const r = cm.getBoundingClientRect(), x = Math.floor((e.clientX - r.left) / cell), y = Math.floor((e.clientY - r.top) / cell);
        if (x >= 0 && y >= 0 && x < K && y < K) showTip(e, cname(y) + ' -> ' + cname(x) + ': ' + P.confusion[y][x]);
      };
      cm.onmouseleave = hideTip;
    }
    lensBox = el('div', row);
    drawLens();
    el('h3', v, { style: 'font-size:14px' }, 'the most confident mistakes');
    const wr = el('div', v, { class: 'row' });
    const z = zoomFor(64);
    for (const w of P.worst) {
      const box = el('div', wr, { style: 'display:flex;gap:4px' });
      const c = canvas(box, C.img * z, C.img * z, '#' + w.index + ': ' + cname(w.label));
      putImage(c.getContext('2d'), b64(w.px), 0, 0, z, false);
      bars(box, 'top-' + w.top.length, w.top.map(function (t) { return t[1]; }), w.top.map(function (t) { return cname(t[0]); }),
        function (i) { return w.top[i][0] === w.label ? '#2ca02c' : '#d62728'; }, { pct: true, max: 1 });
    }
  }
  let lensBox = null;
  function drawLens() {
    if (!lensBox) return;
    lensBox.textContent = '';
    const series = snaps.map(function (sn, s) {
      return { name: snapLabel(s), colour: s === cur ? '#d62728' : '#bbb', width: s === cur ? 2.5 : 1, dots: s === cur, pts: sn.lens.map(function (a, l) { return [l, a]; }) };
    });
    series.push(series.splice(cur, 1)[0]);
    chart(lensBox, 'logit lens: top-1 per block (red: ' + snapLabel(cur) + ')', series, { xlabel: 'block', w: 380, h: 200 });
  }

  // ---------------------------------------------------------------- 7. layer health
  function drawHealth() {
    const v = document.getElementById('health-view');
    v.textContent = '';
    const Nn = D.norms;
    if (!Nn || !Nn.steps.length) { el('p', v, { class: 'none' }, 'no norms.csv in this run'); return; }
    const sel = el('div', v);
    const opts = [['r', 'update / weight'], ['w', 'weight norm'], ['g', 'gradient norm (after clipping)'], ['u', 'update norm']];
    for (const o of opts) { const b = el('button', sel, o[0] === metric ? { class: 'sel' } : null, o[1]); b.onclick = function () { metric = o[0]; drawHealth(); }; }
    const series = [];
    Nn.params.forEach(function (name, k) {
      if (/bias$|norm/.test(name) && Nn.params.length > 12) return;       // weights only, when there are many
      const m = /blocks\.(\d+)\./.exec(name), depth = m ? (Number(m[1]) + 1) / (L + 1) : (/head/.test(name) ? 1 : 0);
      const pts = Nn.steps.map(function (st, i) {
        const w = Nn.w[k][i], val = metric === 'r' ? (w > 0 ? Nn.u[k][i] / w : null) : Nn[metric][k][i];
        return [st, val > 0 ? val : null];
      });
      series.push({ name: name, colour: rgb(viridis(depth * 0.9)), pts: pts, width: 1.2 });
    });
    chart(v, opts.filter(function (o) { return o[0] === metric; })[0][1] + ' per parameter tensor (colour: depth; hover a line for its name)', series,
      { log: true, xlabel: 'step', marks: snapSteps, w: 760, h: 280 });
  }

  // ---------------------------------------------------------------- 8. PCA
  let pcaCanvas = null;
  function drawPCA() {
    const v = document.getElementById('pca-view');
    v.textContent = '';
    const xy = snaps[cur].pca, lab = D.pca_labels, n = lab.length;
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (let i = 0; i < n; i++) { x0 = Math.min(x0, xy[2 * i]); x1 = Math.max(x1, xy[2 * i]); y0 = Math.min(y0, xy[2 * i + 1]); y1 = Math.max(y1, xy[2 * i + 1]); }
    const W = 380, pad = 10;
    pcaCanvas = canvas(v, W, W, n + ' test images, ' + snapLabel(cur) + ': PC1 ' + (100 * snaps[cur].pca_var[0]).toFixed(0) + '%, PC2 ' + (100 * snaps[cur].pca_var[1]).toFixed(0) + '% of the variance');
    const ctx = pcaCanvas.getContext('2d');
    ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, W, W);
    for (let i = 0; i < n; i++) {
      ctx.fillStyle = classColour(lab[i]);
      ctx.fillRect(pad + (xy[2 * i] - x0) / (x1 - x0 || 1) * (W - 2 * pad) - 2, pad + (1 - (xy[2 * i + 1] - y0) / (y1 - y0 || 1)) * (W - 2 * pad) - 2, 4, 4);
    }
    const lg = el('div', v, { class: 'cap', style: 'text-align:left' });
    for (let k = 0; k < K && k < 40; k++) el('span', lg, { style: 'color:' + classColour(k) + ';margin-right:8px' }, '\u25a0 ' + cname(k));
  }

  // ---------------------------------------------------------------- the slider
  function setSnap(s) {
    cur = Math.max(0, Math.min(snaps.length - 1, s));
    document.getElementById('snap').value = cur;
    document.getElementById('snaplabel').textContent = snapLabel(cur) + ' (' + (cur + 1) + ' of ' + snaps.length + ')';
    drawAttention(); drawEmbeddings(); drawPCA(); drawLens();
  }
  document.getElementById('snap').addEventListener('input', function (e) { setSnap(Number(e.target.value)); });

  drawE2E(); drawCurves(); drawPredictions(); drawHealth(); setSnap(cur);
  // #only=a,b: show those views alone (e.g. to print or screenshot one of them); &snap=K: open at
  // snapshot K (0: the first)
  if (location.hash.indexOf('#only=') === 0) {
    const keep = location.hash.slice(6).split('&')[0].split(',');
    for (const sec of document.querySelectorAll('section')) if (keep.indexOf(sec.id) < 0) sec.style.display = 'none';
  }
  const snapArg = /[#&]snap=(\d+)/.exec(location.hash);
  if (snapArg) setSnap(Math.min(snaps.length - 1, Number(snapArg[1])));

  // ---------------------------------------------------------------- #test: drive the page, checksum what it draws
  function sum(c) {
    if (!c) return 'none';
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let h = 2166136261, lit = 0;
    for (let i = 0; i < d.length; i++) { h = Math.imul(h ^ d[i], 16777619) >>> 0; }
    for (let i = 0; i < d.length; i += 4) if (d[i] !== d[0] || d[i + 1] !== d[1] || d[i + 2] !== d[2]) lit++;
    return h.toString(16) + '/' + lit;
  }
  if (location.hash === '#test') {
    const r = { views: 0 };
    for (const id of ['e2e-view', 'curves-view', 'att-view', 'emb-view', 'pred-view', 'health-view', 'pca-view'])
      if (document.getElementById(id) && document.getElementById(id).children.length) r.views++;
    setSnap(0); r.att_first = sum(attGrid); r.pca_first = sum(pcaCanvas);
    setSnap(snaps.length - 1); r.att_last = sum(attGrid); r.pca_last = sum(pcaCanvas);
    selectPatch(Math.floor(N / 2)); r.att_click = sum(attGrid);
    selectPatch(-1); r.att_back = sum(attGrid);
    r.snapshots = snaps.length;
    r.errors = errors;
    document.getElementById('test-result').textContent = 'TEST-RESULT ' + JSON.stringify(r);
  }
})();
