// The recognizer page: upload or draw a line, POST it to /v1/predict, show text and confidence.
// No build step and no external resources: plain DOM APIs only.
"use strict";

const canvas = document.getElementById("canvas");
const ctx = canvas.getContext("2d");
const fileInput = document.getElementById("file");
const preview = document.getElementById("preview");
const pen = document.getElementById("pen");
const el = (id) => document.getElementById(id);

let source = "canvas";   // what "Recognise" sends: the last thing the user touched
let drawn = false;
let drawing = false;

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

el("clear").addEventListener("click", () => { clearCanvas(); source = "canvas"; });

fileInput.addEventListener("change", () => {
  const file = fileInput.files[0];
  if (!file) return;
  source = "file";
  if (preview.src) URL.revokeObjectURL(preview.src);
  preview.src = URL.createObjectURL(file);
  preview.hidden = false;
});

function showError(message) {
  el("error").textContent = message;
  el("error").hidden = false;
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
  el("busy").hidden = false;
  el("recognise").disabled = true;
  try {
    const response = await fetch("/v1/predict", { method: "POST", body: form });
    let body = null;
    try { body = await response.json(); } catch (_) { /* not JSON */ }
    if (!response.ok) {
      const detail = body && body.detail ? (typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)) : response.statusText;
      showError(`Error ${response.status}: ${detail}`);
      return;
    }
    el("text").textContent = body.text === "" ? "(no text found)" : body.text;
    el("confidence").textContent = `${(100 * body.confidence).toFixed(1)} %`;
    el("model").textContent = body.model_version;
    el("timing").textContent = ` · ${body.image_width}×${body.image_height} px · ${body.elapsed_ms.toFixed(1)} ms`;
  } catch (error) {
    showError(`Request failed: ${error.message}`);
  } finally {
    el("busy").hidden = true;
    el("recognise").disabled = false;
  }
}

el("recognise").addEventListener("click", recognise);
