// Grids of coloured cells (attention weights, head statistics) drawn on a canvas.
//
// Plotly took 40–120 ms of the browser's main thread per chart, and the attention page
// draws four of them on every keystroke; this draws one in a few milliseconds. The
// chart is described by components/grid.py (see its docstring for the spec); this
// file lays it out, draws it, and gives it what a chart needs: a label under the
// pointer, an image to save (PNG or SVG) and a text for screen readers.
//
// Everything a visitor typed arrives as data and is drawn as canvas text or set as
// textContent: never parsed as markup.

const TITLE_GAP = 8;
const TICK_GAP = 4;
const COLORBAR_PX = 12;
const DARK_TEXT = "#262730";
const LIGHT_TEXT = "#ffffff";

// --- numbers as plotly's d3 formats write them (".4f", ".0%") --------------------------

function formatted(value, format) {
  if (value === null || Number.isNaN(value)) return "–";
  const match = /^\.(\d+)([f%])$/.exec(format || "");
  if (!match) return String(value);
  const digits = Number(match[1]);
  return match[2] === "%" ? (value * 100).toFixed(digits) + "%" : value.toFixed(digits);
}

// --- arrays sent as base64 bytes ---------------------------------------------------------

function bytesOf(b64) {
  const raw = atob(b64);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes;
}

function floatsOf(b64) {
  return new Float32Array(bytesOf(b64).buffer);
}

// --- layout -------------------------------------------------------------------------------

function fontOf(size, weight) {
  return `${weight || "normal"} ${size}px ${pageFont()}`;
}

// The page's own typeface (Streamlit's), read once.
let pageFontFamily = null;
function pageFont() {
  if (pageFontFamily === null) {
    pageFontFamily = getComputedStyle(document.body).fontFamily || "sans-serif";
  }
  return pageFontFamily;
}

function widest(ctx, labels, size) {
  ctx.font = fontOf(size);
  let most = 0;
  for (const label of labels) most = Math.max(most, ctx.measureText(label).width);
  return most;
}

// Every `step`-th tick, so that labels `spacing` px apart do not overlap at `size` px.
function thinned(ticks, spacing, size) {
  const step = Math.max(1, Math.ceil((size + 2) / Math.max(spacing, 1e-6)));
  return ticks.filter((_, i) => i % step === 0);
}

function panelLayout(ctx, panel, box, font) {
  const xSize = panel.x.size || font;
  const ySize = panel.y.size || font;
  const yLabels = panel.y.ticks.map((t) => t[1]);
  const xLabels = panel.x.ticks.map((t) => t[1]);
  const angle = ((panel.x.angle || 0) * Math.PI) / 180;
  const xWidest = widest(ctx, xLabels, xSize);
  const xBand = panel.x.ticks.length
    ? Math.abs(Math.sin(angle)) * xWidest + Math.abs(Math.cos(angle)) * xSize + TICK_GAP * 2
    : 0;
  const titleBand = panel.title ? font + 4 + TITLE_GAP : 0;
  const xTitleBand = panel.x.title ? font + TITLE_GAP : 0;
  const yTitleBand = panel.y.title ? font + TITLE_GAP : 0;
  const yBand = panel.y.ticks.length ? widest(ctx, yLabels, ySize) + TICK_GAP * 2 : 0;
  let colorbarBand = 0;
  if (panel.colorbar) {
    const labels = panel.colorbar.ticks.map((t) => t[1]);
    colorbarBand = 10 + COLORBAR_PX + TICK_GAP + widest(ctx, labels, font) + TICK_GAP;
    colorbarBand += panel.colorbar.title ? font + TITLE_GAP : 0;
  }
  // The last label of a slanted axis hangs past the plot's right edge.
  const overhang = angle ? Math.cos(angle) * widest(ctx, xLabels.slice(-1), xSize) : 0;
  const top = box.y + titleBand + (panel.x.side === "top" ? xTitleBand + xBand : 0);
  // With nothing under the plot, room for half the colour bar's lowest label.
  const below = panel.colorbar ? font / 2 + 2 : 0;
  const bottom = box.y + box.h - (panel.x.side === "top" ? below : xTitleBand + xBand);
  const left = box.x + yTitleBand + yBand;
  const right = box.x + box.w - Math.max(colorbarBand, overhang, 4);
  const plot = { x: left, y: top, w: Math.max(right - left, 10), h: Math.max(bottom - top, 10) };
  if (panel.square) {
    // Cells as tall as they are wide (every head's tile a square).
    const cell = Math.min(plot.w / panel.cols, plot.h / panel.rows);
    plot.w = cell * panel.cols;
    plot.h = cell * panel.rows;
  }
  return { plot, xSize, ySize, angle, xBand, titleBand, box };
}

// --- the scene: drawing operations, replayed on a canvas or written as SVG --------------

function buildScene(spec, width, ctx) {
  const font = spec.font;
  const ops = [];
  const layouts = [];
  const columns = Math.min(spec.columns || 1, spec.panels.length);
  const rowsOfPanels = Math.ceil(spec.panels.length / columns);
  const colGap = columns > 1 ? 24 : 0;
  const cellW = (width - colGap * (columns - 1)) / columns;
  // The chart's own title, over all its panels (each panel may have one of its own).
  const titleBand = spec.title ? font + 4 + TITLE_GAP : 0;
  if (spec.title) {
    ops.push({ op: "text", x: width / 2, y: font + 2, s: spec.title, size: font + 2,
      align: "center", weight: "600" });
  }
  const cellH = (spec.height - titleBand) / rowsOfPanels;
  spec.panels.forEach((panel, index) => {
    const row = Math.floor(index / columns);
    const col = index % columns;
    const box = { x: col * (cellW + colGap), y: titleBand + row * cellH, w: cellW, h: cellH };
    const layout = panelLayout(ctx, panel, box, font);
    layouts.push(layout);
    drawPanel(ops, panel, layout, font, spec);
  });
  // A chart of square cells may need less than its height: no blank band below it.
  let height = spec.height;
  if (spec.panels.length === 1 && spec.panels[0].square) {
    const { plot, xBand } = layouts[0];
    const below = spec.panels[0].x.side === "top" ? 0 : xBand + font + TITLE_GAP;
    height = Math.min(height, Math.ceil(plot.y + plot.h + below + 6));
  }
  return { ops, layouts, width, height };
}

function drawPanel(ops, panel, layout, font, spec) {
  const { plot, xSize, ySize, angle } = layout;
  const cw = plot.w / panel.cols;
  const ch = plot.h / panel.rows;
  if (panel.title) {
    ops.push({ op: "text", x: plot.x + plot.w / 2, y: layout.box.y + font + 2, s: panel.title,
      size: font + 2, align: "center", weight: "600" });
  }
  if (panel.image) {
    ops.push({ op: "image", x: plot.x, y: plot.y, w: plot.w, h: plot.h, src: panel.image,
      smooth: !!panel.smooth });
  } else {
    ops.push({ op: "cells", x: plot.x, y: plot.y, w: plot.w, h: plot.h, panel,
      gap: cw > 6 && ch > 6 ? panel.gap || 0 : 0, lut: panel.lut });
  }
  for (const y of panel.separators || []) {
    ops.push({ op: "line", x1: plot.x, y1: plot.y + y * ch, x2: plot.x + plot.w,
      y2: plot.y + y * ch, color: "#ffffff", width: 3 });
  }
  if (panel.text) drawCellText(ops, panel, plot, cw, ch);
  if (panel.outline) {
    const [c0, r0, c1, r1] = panel.outline;
    ops.push({ op: "box", x: plot.x + c0 * cw, y: plot.y + r0 * ch, w: (c1 - c0) * cw,
      h: (r1 - r0) * ch, color: spec.highlight, width: 3 });
  }
  // Tick labels: thinned where they would overlap.
  const yTicks = thinned(panel.y.ticks, ch * (panel.y.spacing || 1), ySize);
  for (const [pos, label] of yTicks) {
    ops.push({ op: "text", x: plot.x - TICK_GAP, y: plot.y + pos * ch, s: label,
      size: ySize, align: "right", baseline: "middle" });
  }
  const xTicks = thinned(panel.x.ticks, cw * (panel.x.spacing || 1), xSize);
  const top = panel.x.side === "top";
  const xy = top ? plot.y - TICK_GAP : plot.y + plot.h + TICK_GAP;
  for (const [pos, label] of xTicks) {
    if (angle) {
      ops.push({ op: "text", x: plot.x + pos * cw, y: xy, s: label, size: xSize,
        align: "left", baseline: "middle", angle: panel.x.angle });
    } else {
      ops.push({ op: "text", x: plot.x + pos * cw, y: xy, s: label, size: xSize,
        align: "center", baseline: top ? "bottom" : "top" });
    }
  }
  if (panel.x.title) {
    const y = top ? plot.y - layout.xBand - TITLE_GAP / 2 : plot.y + plot.h + layout.xBand + font;
    ops.push({ op: "text", x: plot.x + plot.w / 2, y, s: panel.x.title, size: font,
      align: "center", baseline: top ? "bottom" : "alphabetic" });
  }
  if (panel.y.title) {
    ops.push({ op: "text", x: layout.box.x + font, y: plot.y + plot.h / 2, s: panel.y.title,
      size: font, align: "center", angle: -90 });
  }
  if (panel.colorbar) drawColorbar(ops, panel, plot, font);
}

function drawCellText(ops, panel, plot, cw, ch) {
  const size = Math.min(panel.text_size || 11, ch * 0.6);
  if (size < 6) return;
  const { values, zmin, zmax } = panel;
  for (let r = 0; r < panel.rows; r++) {
    for (let c = 0; c < panel.cols; c++) {
      const i = r * panel.cols + c;
      const level = (values[i] - zmin) / (zmax - zmin || 1);
      ops.push({ op: "text", x: plot.x + (c + 0.5) * cw, y: plot.y + (r + 0.5) * ch,
        s: panel.text[i], size, align: "center", baseline: "middle",
        color: level > 0.55 ? LIGHT_TEXT : DARK_TEXT });
    }
  }
}

function drawColorbar(ops, panel, plot, font) {
  const x = plot.x + plot.w + 10;
  const bar = { x, y: plot.y, w: COLORBAR_PX, h: Math.min(plot.h, 300) };
  ops.push({ op: "gradient", ...bar, lut: panel.lut });
  const { zmin, zmax } = panel;
  for (const [value, label] of panel.colorbar.ticks) {
    const y = bar.y + bar.h * (1 - (value - zmin) / (zmax - zmin || 1));
    ops.push({ op: "text", x: x + COLORBAR_PX + TICK_GAP, y, s: label, size: font,
      align: "left", baseline: "middle" });
  }
  if (panel.colorbar.title) {
    const labels = panel.colorbar.ticks.map((t) => t[1]);
    const ctx = measuring();
    const tx = x + COLORBAR_PX + TICK_GAP * 2 + widest(ctx, labels, font) + font / 2;
    ops.push({ op: "text", x: tx, y: bar.y + bar.h / 2, s: panel.colorbar.title, size: font,
      align: "center", angle: 90 });
  }
}

let measuringCtx = null;
function measuring() {
  if (!measuringCtx) measuringCtx = document.createElement("canvas").getContext("2d");
  return measuringCtx;
}

// --- replaying the scene -------------------------------------------------------------------

// The table's entry for a level in [0, 1], as an offset into its RGB bytes.
function entry(lut, level) {
  const last = lut.length / 3 - 1;
  if (Number.isNaN(level)) return 0;
  return Math.round(Math.max(0, Math.min(1, level)) * last) * 3;
}

function colourOf(lut, level) {
  const i = entry(lut, level);
  return `rgb(${lut[i]},${lut[i + 1]},${lut[i + 2]})`;
}

// The cells as an image, one pixel each (crisp when enlarged).
function cellImage(panel, lut) {
  const { rows, cols, values, zmin, zmax } = panel;
  const canvas = document.createElement("canvas");
  canvas.width = cols;
  canvas.height = rows;
  const ctx = canvas.getContext("2d");
  const pixels = ctx.createImageData(cols, rows);
  const span = zmax - zmin || 1;
  for (let i = 0; i < rows * cols; i++) {
    const k = entry(lut, (values[i] - zmin) / span);
    pixels.data[i * 4] = lut[k];
    pixels.data[i * 4 + 1] = lut[k + 1];
    pixels.data[i * 4 + 2] = lut[k + 2];
    pixels.data[i * 4 + 3] = 255;
  }
  ctx.putImageData(pixels, 0, 0);
  return canvas;
}

function drawCells(ctx, op) {
  const { panel, lut } = op;
  if (!op.gap) {
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(cellImage(panel, lut), op.x, op.y, op.w, op.h);
    return;
  }
  const cw = op.w / panel.cols;
  const ch = op.h / panel.rows;
  const span = panel.zmax - panel.zmin || 1;
  for (let r = 0; r < panel.rows; r++) {
    for (let c = 0; c < panel.cols; c++) {
      ctx.fillStyle = colourOf(lut, (panel.values[r * panel.cols + c] - panel.zmin) / span);
      ctx.fillRect(op.x + c * cw, op.y + r * ch, cw - op.gap, ch - op.gap);
    }
  }
}

function drawText(ctx, op) {
  ctx.save();
  ctx.font = fontOf(op.size, op.weight);
  ctx.fillStyle = op.color || DARK_TEXT;
  ctx.textAlign = op.align || "left";
  ctx.textBaseline = op.baseline || "alphabetic";
  ctx.translate(op.x, op.y);
  if (op.angle) ctx.rotate((op.angle * Math.PI) / 180);
  ctx.fillText(op.s, 0, 0);
  ctx.restore();
}

function replay(ctx, scene, images) {
  for (const op of scene.ops) {
    if (op.op === "cells") drawCells(ctx, op);
    else if (op.op === "image") {
      ctx.imageSmoothingEnabled = op.smooth;
      ctx.drawImage(images.get(op.src), op.x, op.y, op.w, op.h);
    } else if (op.op === "text") drawText(ctx, op);
    else if (op.op === "line") {
      ctx.strokeStyle = op.color;
      ctx.lineWidth = op.width;
      ctx.beginPath();
      ctx.moveTo(op.x1, op.y1);
      ctx.lineTo(op.x2, op.y2);
      ctx.stroke();
    } else if (op.op === "box") {
      ctx.strokeStyle = op.color;
      ctx.lineWidth = op.width;
      ctx.strokeRect(op.x, op.y, op.w, op.h);
    } else if (op.op === "gradient") {
      for (let k = 0; k < op.h; k++) {
        ctx.fillStyle = colourOf(op.lut, 1 - k / op.h);
        ctx.fillRect(op.x, op.y + k, op.w, 1.5);
      }
    }
  }
}

// --- SVG export: the same scene, text kept as text ----------------------------------------

function escaped(text) {
  return String(text).replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

function svgOf(scene, images) {
  const parts = [];
  const family = escaped(pageFont());
  for (const op of scene.ops) {
    if (op.op === "cells" || op.op === "image" || op.op === "gradient") {
      const canvas = document.createElement("canvas");
      canvas.width = Math.max(1, Math.round(op.w * 2));
      canvas.height = Math.max(1, Math.round(op.h * 2));
      const ctx = canvas.getContext("2d");
      ctx.scale(2, 2);
      replay(ctx, { ops: [{ ...op, x: 0, y: 0 }] }, images);
      parts.push(`<image x="${op.x}" y="${op.y}" width="${op.w}" height="${op.h}" ` +
        `href="${canvas.toDataURL("image/png")}"/>`);
    } else if (op.op === "text") {
      const anchor = { left: "start", center: "middle", right: "end" }[op.align || "left"];
      const baseline = { middle: "central", top: "hanging", bottom: "text-after-edge" }[
        op.baseline] || "alphabetic";
      const turn = op.angle ? ` transform="rotate(${op.angle} ${op.x} ${op.y})"` : "";
      parts.push(`<text x="${op.x}" y="${op.y}" font-size="${op.size}" ` +
        `font-family="${family}" font-weight="${op.weight || "normal"}" ` +
        `fill="${op.color || DARK_TEXT}" text-anchor="${anchor}" ` +
        `dominant-baseline="${baseline}"${turn}>${escaped(op.s)}</text>`);
    } else if (op.op === "line") {
      parts.push(`<line x1="${op.x1}" y1="${op.y1}" x2="${op.x2}" y2="${op.y2}" ` +
        `stroke="${op.color}" stroke-width="${op.width}"/>`);
    } else if (op.op === "box") {
      parts.push(`<rect x="${op.x}" y="${op.y}" width="${op.w}" height="${op.h}" ` +
        `fill="none" stroke="${op.color}" stroke-width="${op.width}"/>`);
    }
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${scene.width}" ` +
    `height="${scene.height}" viewBox="0 0 ${scene.width} ${scene.height}">` +
    `<rect width="100%" height="100%" fill="#ffffff"/>${parts.join("")}</svg>`;
}

// --- the label under the pointer ------------------------------------------------------

function hoverText(panel, row, col) {
  const hover = panel.hover;
  const cell = hoverCell(panel, row, col);
  if (!cell) return null;
  const [r, c] = cell;
  if (hover.text) return hover.text[r * hover.cols + c];
  const i = r * panel.cols + c;
  const value = panel.text ? panel.text[i] : formatted(panel.values[i], hover.format);
  return `${hover.y[r]}${hover.joiner ?? " → "}${hover.x[c]}\n${hover.name} ${value}`;
}

function cellUnder(scene, spec, x, y) {
  for (let i = 0; i < scene.layouts.length; i++) {
    const { plot } = scene.layouts[i];
    const panel = spec.panels[i];
    if (x < plot.x || y < plot.y || x >= plot.x + plot.w || y >= plot.y + plot.h) continue;
    const col = Math.floor(((x - plot.x) / plot.w) * panel.cols);
    const row = Math.floor(((y - plot.y) / plot.h) * panel.rows);
    return { panel, row, col };
  }
  return null;
}

// --- the component ---------------------------------------------------------------------------

// The spec arrives as the bytes of its JSON (components/widgets.py).
function decoded(data) {
  const spec = JSON.parse(new TextDecoder().decode(data));
  const lut = bytesOf(spec.palette);
  for (const panel of spec.panels) {
    // A panel may bring its own colour table (a signed state beside gates in [0, 1]).
    panel.lut = panel.palette ? bytesOf(panel.palette) : lut;
    if (panel.z) panel.values = floatsOf(panel.z);
  }
  return spec;
}

function loadImages(spec) {
  const images = new Map();
  const waits = [];
  for (const panel of spec.panels) {
    if (!panel.image) continue;
    const img = new Image();
    img.src = panel.image;
    images.set(panel.image, img);
    waits.push(img.decode().catch(() => undefined));
  }
  return Promise.all(waits).then(() => images);
}

function download(name, blob) {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = name;
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

function save(root) {
  const { spec, scene, images } = root.__grid;
  if (!scene) return; // the chart that just arrived is not drawn yet
  const name = `${spec.file}.${spec.format}`;
  if (spec.format === "svg") {
    download(name, new Blob([svgOf(scene, images)], { type: "image/svg+xml" }));
    return;
  }
  const canvas = document.createElement("canvas");
  canvas.width = scene.width * 2;
  canvas.height = scene.height * 2;
  const ctx = canvas.getContext("2d");
  ctx.scale(2, 2);
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, scene.width, scene.height);
  replay(ctx, scene, images);
  canvas.toBlob((blob) => download(name, blob), "image/png");
}

function skeleton(parentElement) {
  const root = document.createElement("div");
  root.className = "seqlens-grid";
  root.style.position = "relative";
  const bar = document.createElement("div");
  bar.style.cssText = "display:flex;justify-content:flex-end;min-height:1.6rem";
  const button = document.createElement("button");
  button.type = "button";
  button.className = "seqlens-grid-save";
  button.style.cssText =
    "font:inherit;font-size:0.8rem;padding:0.1rem 0.5rem;border:1px solid #d6dbe2;" +
    "border-radius:0.3rem;background:#fff;color:#262730;cursor:pointer";
  button.addEventListener("click", () => save(root));
  bar.appendChild(button);
  const canvas = document.createElement("canvas");
  canvas.setAttribute("role", "img");
  canvas.style.display = "block";
  const tip = document.createElement("div");
  tip.className = "seqlens-grid-hover";
  tip.style.cssText =
    "position:absolute;pointer-events:none;display:none;white-space:pre;z-index:5;" +
    "background:#262730;color:#fff;border-radius:4px;padding:4px 8px;line-height:1.35";
  root.append(bar, canvas, tip);
  canvas.addEventListener("mousemove", (event) => pointAt(root, event));
  canvas.addEventListener("click", (event) => pick(root, event));
  canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  parentElement.appendChild(root);
  new ResizeObserver(() => draw(root)).observe(parentElement);
  // Text drawn before the page's typeface arrived is drawn again in it.
  document.fonts.addEventListener("loadingdone", () => draw(root));
  return root;
}

// The hover cell under the pointer, [row, col] (a head's tile in the all-heads chart).
function hoverCell(panel, row, col) {
  const pitch = panel.hover.pitch || 1; // cells per hover cell (a head's tile and its gap)
  const r = Math.floor(row / pitch);
  const c = Math.floor(col / pitch);
  if (r < 0 || c < 0 || r >= panel.hover.rows || c >= panel.hover.cols) return null;
  return [r, c];
}

function pointed(root, event) {
  const state = root.__grid;
  if (!state || !state.scene) return null;
  const canvas = root.querySelector("canvas");
  const rect = canvas.getBoundingClientRect();
  const x = event.clientX - rect.left;
  const y = event.clientY - rect.top;
  return { state, canvas, x, y, hit: cellUnder(state.scene, state.spec, x, y) };
}

// A click on a pickable chart's cell tells the page which one ([row, col]).
function pick(root, event) {
  const at = pointed(root, event);
  if (!at || !at.hit || !at.hit.panel.pick || !at.state.setTriggerValue) return;
  const cell = hoverCell(at.hit.panel, at.hit.row, at.hit.col);
  if (cell) at.state.setTriggerValue("pick", cell);
}

function pointAt(root, event) {
  const tip = root.querySelector(".seqlens-grid-hover");
  const at = pointed(root, event);
  if (!at) return;
  const { state, canvas, x, y, hit } = at;
  canvas.style.cursor = hit && hit.panel.pick ? "pointer" : "default";
  const text = hit && hoverText(hit.panel, hit.row, hit.col);
  if (!text) {
    tip.style.display = "none";
    return;
  }
  tip.textContent = text;
  tip.style.fontSize = `${state.spec.hover_font}px`;
  tip.style.display = "block";
  const left = canvas.offsetLeft + x + 14;
  const flip = left + tip.offsetWidth > root.clientWidth;
  tip.style.left = `${flip ? canvas.offsetLeft + x - 14 - tip.offsetWidth : left}px`;
  tip.style.top = `${canvas.offsetTop + y + 14}px`;
}

function draw(root) {
  const state = root.__grid;
  if (!state || !state.images) return;
  const width = root.clientWidth;
  if (!width) return;
  const canvas = root.querySelector("canvas");
  const ctx = canvas.getContext("2d");
  const scale = window.devicePixelRatio || 1;
  const scene = buildScene(state.spec, width, ctx);
  canvas.width = Math.round(width * scale);
  canvas.height = Math.round(scene.height * scale);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${scene.height}px`;
  ctx.setTransform(scale, 0, 0, scale, 0, 0);
  ctx.clearRect(0, 0, width, scene.height);
  replay(ctx, scene, state.images);
  state.scene = scene;
  // What the chart now shows, for tests and the bench: its column labels, in order.
  root.dataset.columns = JSON.stringify(state.spec.panels[0].columns || []);
}

// Draws (or redraws) one chart: what the small per-chart component calls.
function render({ data, parentElement, setTriggerValue }) {
  const root = parentElement.querySelector(".seqlens-grid") || skeleton(parentElement);
  const spec = decoded(data);
  const canvas = root.querySelector("canvas");
  canvas.setAttribute("aria-label", spec.label || "");
  const button = root.querySelector(".seqlens-grid-save");
  button.textContent = spec.save_label;
  button.title = spec.save_help || "";
  const state = { spec, images: null, setTriggerValue };
  root.__grid = state;
  loadImages(spec).then((images) => {
    if (root.__grid !== state) return; // a newer chart arrived meanwhile
    state.images = images;
    draw(root);
  });
}

// This code is sent once per page run, not once per chart (components/widgets.py): the
// charts' own component calls the renderer it finds here, and charts that came first
// wait in a queue for it.
window.__seqlensGrid = render;
for (const waiting of window.__seqlensGridQueue || []) render(waiting);
window.__seqlensGridQueue = [];

export default function () {}
