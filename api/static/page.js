// The page reader: upload a page, POST it to /v1/predict/page, draw the found lines over the image (SVG
// polygons in the page's pixels, scaled with the image), list their text with the unsure words marked, and
// copy the page's text. A PDF is read page by page and listed under page headings (the browser cannot draw a PDF
// in an <img>). Either can be downloaded as a searchable PDF (?format=pdf). No build step, no external resources,
// no innerHTML: plain DOM APIs only.
"use strict";

const LOW_CONFIDENCE = 0.5;  // words below this are highlighted (in the list and on the page)

const el = (id) => document.getElementById(id);
const fileInput = el("page-file");
const image = el("page-image");
const overlay = el("overlay");
const SVG = overlay.namespaceURI;  // the inline <svg>'s namespace (no URL in the static files)

el("threshold").textContent = String(Math.round(100 * LOW_CONFIDENCE));

const percent = (value) => `${Math.round(100 * value)}%`;
const points = (polygon) => polygon.map(([x, y]) => `${x},${y}`).join(" ");

const isPdf = (file) => file.type === "application/pdf" || file.name.toLowerCase().endsWith(".pdf");

fileInput.addEventListener("change", () => {
  const file = fileInput.files[0];
  clearResult();
  if (image.src) URL.revokeObjectURL(image.src);
  if (!file || isPdf(file)) {
    image.removeAttribute("src");
    el("page-box").hidden = true;
    return;
  }
  image.src = URL.createObjectURL(file);
  image.alt = `the chosen page, ${file.name}`;
  el("page-caption").textContent = file.name;
  el("page-box").hidden = false;
});

function showError(message) {
  el("error").textContent = message;
  el("error").hidden = false;
}

function clearResult() {
  for (const id of ["lines", "overlay", "summary", "copied"]) el(id).replaceChildren();
  el("page-text").value = "";
  el("copy").disabled = true;
  el("download-pdf").disabled = true;
}

// Highlight a line on the page and in the list together (hover or keyboard focus on either).
function link(polygon, item) {
  const on = () => { polygon.classList.add("active"); item.classList.add("active"); };
  const off = () => { polygon.classList.remove("active"); item.classList.remove("active"); };
  for (const target of [polygon, item]) {
    target.addEventListener("mouseenter", on);
    target.addEventListener("mouseleave", off);
  }
  item.addEventListener("focus", on);
  item.addEventListener("blur", off);
}

// One line's text, word by word when it has words, the unsure ones in <mark> ("uncertain" spelled out for
// screen readers), or its error.
function lineText(line) {
  const out = document.createElement("span");
  out.className = "line-text";
  if (line.error) {
    out.classList.add("line-error");
    out.textContent = `(not read: ${line.error})`;
    return out;
  }
  if (!line.words.length) { out.textContent = line.text || "(no text found)"; return out; }
  line.words.forEach((word, i) => {
    if (i > 0) out.append(" ");
    if (word.confidence < LOW_CONFIDENCE) {
      const mark = document.createElement("mark");
      mark.className = "low";
      mark.title = `confidence ${percent(word.confidence)}`;
      mark.textContent = word.text;
      const note = document.createElement("span");
      note.className = "sr-only";
      note.textContent = ` (uncertain, ${percent(word.confidence)})`;
      out.append(mark, note);
    } else {
      const span = document.createElement("span");
      span.title = `confidence ${percent(word.confidence)}`;
      span.textContent = word.text;
      out.append(span);
    }
  });
  return out;
}

// A PDF's answer: each page under a heading (or the reason it was not read), then its lines, no drawing.
function showDocument(body) {
  const list = el("lines");
  let count = 0;
  for (const page of body.pages) {
    const heading = document.createElement("li");
    heading.className = "page-heading";
    heading.textContent = page.error ? `Page ${page.page}: not read (${page.error})`
                                     : `Page ${page.page}: ${page.lines.length} line${page.lines.length === 1 ? "" : "s"}`;
    list.append(heading);
    for (const line of page.lines) {
      const item = document.createElement("li");
      item.dataset.line = `${page.page}-${line.id}`;
      item.append(lineText(line));
      list.append(item);
      count += 1;
    }
  }
  el("summary").textContent = `${body.pages.length} page${body.pages.length === 1 ? "" : "s"} · ${count} lines found` +
    ` · model ${body.model_version} · ${body.elapsed_ms.toFixed(0)} ms`;
  el("page-text").value = body.text;
  el("copy").disabled = body.text.trim() === "";
}

function showPage(body) {
  if (body.pages) { showDocument(body); return; }
  overlay.setAttribute("viewBox", `0 0 ${body.width} ${body.height}`);
  const list = el("lines");
  body.lines.forEach((line, i) => {
    const shape = document.createElementNS(SVG, "polygon");
    shape.setAttribute("points", points(line.polygon));
    shape.setAttribute("class", line.error ? "line failed" : "line");
    shape.dataset.line = line.id;
    const title = document.createElementNS(SVG, "title");
    title.textContent = `${i + 1}: ${line.error ? "not read" : line.text}`;
    shape.append(title);
    overlay.append(shape);
    for (const word of line.words) {
      if (word.confidence >= LOW_CONFIDENCE) continue;
      const box = document.createElementNS(SVG, "polygon");
      box.setAttribute("points", points(word.polygon));
      box.setAttribute("class", "word low");
      overlay.append(box);
    }
    const item = document.createElement("li");
    item.tabIndex = 0;
    item.dataset.line = line.id;
    if (line.confidence !== null) item.title = `line confidence ${percent(line.confidence)}`;
    item.append(lineText(line));
    list.append(item);
    link(shape, item);
  });
  const count = body.lines.length;
  el("summary").textContent = (count === 0 ? "No lines of writing were found on this page."
                                          : `${count} line${count === 1 ? "" : "s"} found`) +
    ` · ${body.width}×${body.height} px · model ${body.model_version}` +
    (body.language ? ` · language ${languageLabel(body.language)}` : "") + ` · ${body.elapsed_ms.toFixed(0)} ms`;
  el("page-text").value = body.text;
  el("copy").disabled = body.text === "";
}

function upload() {
  const file = fileInput.files[0];
  const form = new FormData();
  form.append("file", file, file.name);
  const headers = {};
  if (el("key").value.trim()) headers["X-API-Key"] = el("key").value.trim();
  return { file, form, headers };
}

async function errorOf(response) {
  let body = null;
  try { body = await response.json(); } catch (_) { /* not JSON */ }
  const detail = body && body.detail ? (typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail))
                                     : response.statusText;
  const wait = response.headers.get("Retry-After");
  return `Error ${response.status}: ${detail}` + (wait ? ` (try again in ${wait} s)` : "");
}

async function readPage() {
  el("error").hidden = true;
  if (!fileInput.files[0]) { showError("Choose an image of a page, or a PDF, first."); return; }
  const { form, headers } = upload();
  el("busy").hidden = false;
  el("read").disabled = true;
  el("result").setAttribute("aria-busy", "true");
  clearResult();
  try {
    const response = await fetch(`/v1/predict/page${readingQuery()}`, { method: "POST", body: form, headers });
    if (!response.ok) { showError(await errorOf(response)); return; }
    showPage(await response.json());
    el("download-pdf").disabled = false;
  } catch (error) {
    showError(`Request failed: ${error.message}`);
  } finally {
    el("busy").hidden = true;
    el("read").disabled = false;
    el("result").removeAttribute("aria-busy");
  }
}

// The clipboard API where the browser allows it (https or localhost), else the selected text area.
async function copyText() {
  const text = el("page-text").value;
  try {
    await navigator.clipboard.writeText(text);
    el("copied").textContent = "Page text copied.";
  } catch (_) {
    el("page-text").select();
    const done = document.execCommand && document.execCommand("copy");
    el("copied").textContent = done ? "Page text copied." : "Select the text below and copy it (Ctrl+C).";
  }
}

// The same upload read again as a searchable PDF (the page as sent, the text invisible on it), saved by the browser.
async function downloadPdf() {
  el("error").hidden = true;
  const { file, form, headers } = upload();
  const query = readingQuery();
  el("download-pdf").disabled = true;
  try {
    const response = await fetch(`/v1/predict/page${query}${query ? "&" : "?"}format=pdf`,
                                 { method: "POST", body: form, headers });
    if (!response.ok) { showError(await errorOf(response)); return; }
    const url = URL.createObjectURL(await response.blob());
    const link = document.createElement("a");
    link.href = url;
    link.download = `${file.name.replace(/\.[^.]+$/, "")}.searchable.pdf`;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (error) {
    showError(`Request failed: ${error.message}`);
  } finally {
    el("download-pdf").disabled = false;
  }
}

el("read").addEventListener("click", readPage);
el("download-pdf").addEventListener("click", downloadPdf);
el("copy").addEventListener("click", copyText);
