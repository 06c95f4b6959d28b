// Collections (/collections): create or open a collection, upload pages (each read by the server at once), show
// a page with its lines drawn over it, correct a line's text (saved with PUT as soon as the field is left or Enter
// is pressed), delete a false line, mark a page done, export the collection. Every call goes to /v1/collections
// with the API key when one is given. No build step, no external resources, no innerHTML: plain DOM APIs only.
"use strict";

const el = (id) => document.getElementById(id);
const overlay = el("overlay");
const SVG = overlay.namespaceURI;
let current = { collection: "", page: "", imageUrl: "" };
let job = null;  // the collection's latest adaptation job

function headers(extra = {}) {
  const key = el("key").value.trim();
  return key ? { ...extra, "X-API-Key": key } : extra;
}

async function api(method, path, body, isJson = true) {
  const options = { method, headers: headers(isJson && body ? { "Content-Type": "application/json" } : {}) };
  if (body) options.body = isJson ? JSON.stringify(body) : body;
  const response = await fetch(`/v1/collections${path}`, options);
  if (!response.ok) {
    let detail = `${response.status}`;
    try { const error = await response.json(); detail = `${error.error}: ${error.detail}`; } catch (_) { /* keep */ }
    throw new Error(detail);
  }
  return response;
}

function showError(message) { el("error").textContent = message; el("error").hidden = false; }
function clearError() { el("error").hidden = true; el("error").textContent = ""; }

async function guarded(action) {
  clearError();
  try { await action(); } catch (error) { showError(error.message); }
}

async function loadCollections(select = "") {
  const list = await (await api("GET", "")).json();
  const picker = el("collection");
  const first = document.createElement("option");
  first.value = ""; first.textContent = list.length ? "(choose)" : "(none yet)";
  picker.replaceChildren(first, ...list.map((c) => {
    const option = document.createElement("option");
    option.value = c.id; option.textContent = `${c.name} (${c.pages.length} pages)`;
    return option;
  }));
  picker.value = select;
  if (select) await openCollection(select);
}

async function openCollection(id) {
  current = { collection: id, page: "", imageUrl: current.imageUrl };
  el("result").hidden = true;
  el("upload-row").hidden = el("export-row").hidden = el("adapt-row").hidden = !id;
  el("reread").hidden = el("cancel-job").hidden = true;
  el("job-status").textContent = "";
  if (!id) { el("pages").replaceChildren(); return; }
  const collection = await (await api("GET", `/${id}`)).json();
  const jobs = await (await api("GET", `/${id}/jobs`)).json();  // a job started before a reload: show it again
  job = jobs.length ? jobs[jobs.length - 1] : null;
  if (job) await poll();
  el("pages").replaceChildren(...collection.pages.map((page, i) => {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = `${i + 1}. ${page.filename}: ${page.corrected_lines} of ${page.lines} lines corrected`
      + (page.done ? " (done)" : "");
    button.addEventListener("click", () => guarded(() => openPage(page.id)));
    item.append(button);
    return item;
  }));
}

async function openPage(pageId) {
  const id = current.collection;
  const page = await (await api("GET", `/${id}/pages/${pageId}`)).json();
  const blob = await (await api("GET", `/${id}/pages/${pageId}/image`)).blob();
  if (current.imageUrl) URL.revokeObjectURL(current.imageUrl);
  current = { collection: id, page: pageId, imageUrl: URL.createObjectURL(blob) };
  el("page-image").src = current.imageUrl;
  el("page-image").alt = `page ${page.filename}`;
  el("page-heading").textContent = `Page: ${page.filename}`;
  el("done").checked = page.done;
  el("saved").textContent = "";
  overlay.setAttribute("viewBox", `0 0 ${page.width} ${page.height}`);
  overlay.replaceChildren();
  el("lines").replaceChildren(...page.lines.map((line, i) => lineItem(line, i)));
  el("result").hidden = false;
}

function lineItem(line, index) {
  const shape = document.createElementNS(SVG, "polygon");
  shape.setAttribute("points", line.polygon.map(([x, y]) => `${x},${y}`).join(" "));
  shape.setAttribute("class", "line");
  overlay.append(shape);
  const item = document.createElement("li");
  const input = document.createElement("input");
  input.type = "text";
  input.value = line.text;
  input.className = line.corrected_text === null ? "line-input" : "line-input corrected";
  input.setAttribute("aria-label", `Line ${index + 1}`);
  input.dataset.saved = line.text;
  const save = () => guarded(async () => {
    if (input.value === input.dataset.saved) return;
    const saved = await (await api("PUT", `/${current.collection}/lines/${line.id}`, { text: input.value })).json();
    input.dataset.saved = input.value = saved.text;
    input.classList.add("corrected");
    el("saved").textContent = `line ${index + 1} saved`;
  });
  input.addEventListener("change", save);
  input.addEventListener("keydown", (event) => { if (event.key === "Enter") { event.preventDefault(); save(); } });
  input.addEventListener("focus", () => shape.classList.add("active"));
  input.addEventListener("blur", () => shape.classList.remove("active"));
  const remove = document.createElement("button");
  remove.type = "button";
  remove.textContent = "Delete";
  remove.setAttribute("aria-label", `Delete line ${index + 1} (not writing)`);
  remove.addEventListener("click", () => guarded(async () => {
    await api("DELETE", `/${current.collection}/lines/${line.id}`);
    item.remove(); shape.remove();
    el("saved").textContent = `line ${index + 1} deleted`;
  }));
  item.append(input, " ", remove);
  return item;
}

async function download(format) {
  const response = await api("GET", `/${current.collection}/export?format=${format}`);
  const link = document.createElement("a");
  link.href = URL.createObjectURL(await response.blob());
  link.download = `collection-${format}.zip`;
  document.body.append(link);
  link.click();
  link.remove();
}

el("create").addEventListener("click", () => guarded(async () => {
  const name = el("new-name").value.trim();
  if (!name) throw new Error("give the new collection a name");
  const collection = await (await api("POST", "", { name })).json();
  el("new-name").value = "";
  await loadCollections(collection.id);
}));
el("collection").addEventListener("change", () => guarded(() => openCollection(el("collection").value)));
el("add-pages").addEventListener("click", () => guarded(async () => {
  const files = el("page-files").files;
  if (!files.length) throw new Error("choose one or more page images first");
  const form = new FormData();
  for (const file of files) form.append("files", file);
  el("busy").hidden = false; el("add-pages").disabled = true;
  try {
    const result = await (await api("POST", `/${current.collection}/pages`, form, false)).json();
    await loadCollections(current.collection);
    if (result.errors.length) showError(result.errors.map((e) => `${e.file}: ${e.detail}`).join("; "));
  } finally {
    el("busy").hidden = true; el("add-pages").disabled = false;
  }
}));
el("done").addEventListener("change", () => guarded(async () => {
  await api("PATCH", `/${current.collection}/pages/${current.page}`, { done: el("done").checked });
  el("saved").textContent = el("done").checked ? "page marked done" : "page marked not done";
  await openCollection(current.collection).then(() => openPage(current.page));
}));
// Adaptation: one background job; its state is polled every 2 s until it ends, then the verdict says whether the
// adapted model reads the user's held-out lines better, and only then can the pages be re-read with it.
function describeJob(j) {
  if (j.state === "running") {
    const cer = j.progress.val_cer === null ? "" : `, held-out CER ${Math.round(1000 * j.progress.val_cer) / 10}%`;
    return `adapting on ${j.lines} corrected lines: step ${j.progress.step}${cer}`;
  }
  if (j.state === "done") {
    const v = j.verdict;
    const cer = (x) => `${Math.round(1000 * x) / 10}%`;
    return j.checkpoint
      ? `adapted: it reads your held-out lines at ${cer(v.fine_tuned_greedy)} (the served model: ${cer(v.parent_greedy)})`
      : "done, but the adapted model reads your held-out lines no better: keep the served model";
  }
  return j.state === "cancelled" ? "cancelled" : `failed: ${j.error}`;
}
async function poll() {
  if (!job || job.collection_id !== current.collection) return;  // another collection was opened since
  const j = await (await api("GET", `/${job.collection_id}/jobs/${job.id}`)).json();
  if (j.collection_id !== current.collection) return;
  job = j;
  el("job-status").textContent = describeJob(j);
  el("cancel-job").hidden = j.state !== "running";
  el("adapt").disabled = j.state === "running";
  el("reread").hidden = !(j.state === "done" && j.checkpoint);
  if (j.state === "running") setTimeout(() => guarded(poll), 2000);
}
el("adapt").addEventListener("click", () => guarded(async () => {
  const minutes = Number(el("minutes").value);
  job = await (await api("POST", `/${current.collection}/adapt`, { minutes })).json();
  await poll();
}));
el("cancel-job").addEventListener("click", () => guarded(async () => {
  await api("DELETE", `/${current.collection}/jobs/${job.id}`);
}));
el("reread").addEventListener("click", () => guarded(async () => {
  el("job-status").textContent = "re-reading the pages…";
  await api("POST", `/${current.collection}/reread`, { job: job.id });
  el("job-status").textContent = "pages re-read with the adapted model (your corrections are kept)";
  if (current.page) await openPage(current.page);
}));

for (const format of ["labels", "page", "alto"]) {
  el(`export-${format}`).addEventListener("click", () => guarded(() => download(format)));
}
el("key").addEventListener("change", () => guarded(() => loadCollections()));
guarded(() => loadCollections());
