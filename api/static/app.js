// The recognizer page: upload or draw a line, POST it to /v1/predict, show the text, its confidence and,
// when the decoder gives per-word confidences, the words it is unsure of. No build step, no external
// resources, no innerHTML: plain DOM APIs only.
"use strict";

const LOW_CONFIDENCE = 0.5;  // words below this are highlighted

const el = (id) => document.getElementById(id);
const canvas = el("canvas");
const ctx = canvas.getContext("2d");
const fileInput = el("file");
const preview = el("preview");
const pen = el("pen");

let source = "canvas";   // what "Recognise" sends: the last thing the user touched
let drawn = false;
let drawing = false;

el("threshold").textContent = String(Math.round(100 * LOW_CONFIDENCE));

function clearCanvas() {
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  drawn = false;
}
clearCanvas();

function point(event) {
  const box = canvas.getBoundingClientRect();
  return [(event.clientX - box.left) * canvas.width / box.width, (event.clientY - box.top) * canvas.height / box.height];
}

canvas.addEventListener("pointerdown", (event) => {
  event.preventDefault();
  canvas.setPointerCapture(event.pointerId);
  drawing = true;
  source = "canvas";
  const [x, y] = point(event);
  ctx.strokeStyle = "#000";
  ctx.lineWidth = Number(pen.value);
  ctx.lineCap = "round";
  ctx.lineJoin = "round";
  ctx.beginPath();
  ctx.moveTo(x, y);
  ctx.lineTo(x + 0.01, y);
  ctx.stroke();
  drawn = true;
});
canvas.addEventListener("pointermove", (event) => {
  if (!drawing) return;
  event.preventDefault();
  const [x, y] = point(event);
  ctx.lineTo(x, y);
  ctx.stroke();
});
for (const type of ["pointerup", "pointercancel", "pointerleave"]) {
  canvas.addEventListener(type, () => { drawing = false; });
}

pen.addEventListener("input", () => pen.setAttribute("aria-valuetext", `${pen.value} pixels`));
el("clear").addEventListener("click", () => { clearCanvas(); source = "canvas"; });

fileInput.addEventListener("change", () => {
  const file = fileInput.files[0];
  if (preview.src) URL.revokeObjectURL(preview.src);
  if (!file) {  // selection cancelled: show nothing rather than an empty image
    preview.removeAttribute("src");
    el("preview-box").hidden = true;
    return;
  }
  source = "file";
  preview.src = URL.createObjectURL(file);
  preview.alt = `the chosen image, ${file.name}`;
  el("preview-caption").textContent = file.name;
  el("preview-box").hidden = false;
});

function showError(message) {
  el("error").textContent = message;
  el("error").hidden = false;
}

function clearResult() {
  for (const id of ["text", "confidence", "model", "timing", "read-language"]) el(id).replaceChildren();
  el("legend").hidden = true;
  el("language-row").hidden = true;
}

// The text, word by word when the response has per-word confidences, with the unsure words in <mark>
// (and "uncertain" spelled out for screen readers).
function showText(body) {
  const out = el("text");
  out.replaceChildren();
  if (body.text === "") { out.textContent = "(no text found)"; return; }
  if (!Array.isArray(body.words) || body.words.length === 0) { out.textContent = body.text; return; }
  let low = 0;
  body.words.forEach((word, i) => {
    if (i > 0) out.append(" ");
    const percent = `${Math.round(100 * word.confidence)}%`;
    if (word.confidence < LOW_CONFIDENCE) {
      low += 1;
      const mark = document.createElement("mark");
      mark.className = "low";
      mark.title = `confidence ${percent}`;
      mark.textContent = word.text;
      const note = document.createElement("span");
      note.className = "sr-only";
      note.textContent = ` (uncertain, ${percent})`;
      out.append(mark, note);
    } else {
      const span = document.createElement("span");
      span.title = `confidence ${percent}`;
      span.textContent = word.text;
      out.append(span);
    }
  });
  el("legend").hidden = low === 0;
}

function canvasBlob() {
  return new Promise((resolve) => canvas.toBlob(resolve, "image/png"));
}

async function recognise() {
  el("error").hidden = true;
  let blob, name;
  if (source === "file" && fileInput.files[0]) {
    blob = fileInput.files[0];
    name = blob.name;
  } else {
    if (!drawn) { showError("Draw a line on the canvas or choose an image file first."); return; }
    blob = await canvasBlob();
    name = "drawing.png";
  }
  const form = new FormData();
  form.append("file", blob, name);
  const headers = {};
  if (el("key").value.trim()) headers["X-API-Key"] = el("key").value.trim();
  el("busy").hidden = false;
  el("recognise").disabled = true;
  el("result").setAttribute("aria-busy", "true");
  try {
    const response = await fetch(`/v1/predict${readingQuery()}`, { method: "POST", body: form, headers });
    let body = null;
    try { body = await response.json(); } catch (_) { /* not JSON */ }
    if (!response.ok) {
      clearResult();
      const detail = body && body.detail ? (typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail))
                                         : response.statusText;
      const wait = response.headers.get("Retry-After");
      showError(`Error ${response.status}: ${detail}` + (wait ? ` (try again in ${wait} s)` : ""));
      return;
    }
    showText(body);
    el("confidence").textContent = `${(100 * body.confidence).toFixed(1)} %`;
    el("read-language").textContent = body.language ? languageLabel(body.language) : "";
    el("language-row").hidden = !body.language;  // greedy reading uses no language's models
    el("model").textContent = body.model_version;
    el("timing").textContent = ` · ${body.image_width}×${body.image_height} px · ${body.elapsed_ms.toFixed(1)} ms`;
  } catch (error) {
    clearResult();
    showError(`Request failed: ${error.message}`);
  } finally {
    el("busy").hidden = true;
    el("recognise").disabled = false;
    el("result").removeAttribute("aria-busy");
  }
}

el("recognise").addEventListener("click", recognise);
