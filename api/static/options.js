// The reading options both pages share: the decoder and language selectors and the query string they make.
// The languages offered are the model's (GET /v1/model: the languages it has decoder bundles for); the
// language only matters for beam search, greedy reading is the same in every language. Plain DOM APIs only.
"use strict";

const LANGUAGE_NAMES = { en: "English", fr: "French", de: "German", es: "Spanish", it: "Italian",
                         pt: "Portuguese", nl: "Dutch" };

function languageLabel(code) {
  return LANGUAGE_NAMES[code] ? `${LANGUAGE_NAMES[code]} (${code})` : code;
}

// Offer the model's languages ("auto" only when it has several), once the model is loaded.
async function loadLanguages(attempts = 60) {
  const select = document.getElementById("language");
  try {
    const response = await fetch("/v1/model");
    if (response.status === 503 && attempts > 1) {  // still loading: ask again shortly
      setTimeout(() => loadLanguages(attempts - 1), 1000);
      return;
    }
    if (!response.ok) return;
    const model = await response.json();
    const languages = model.languages || [];
    for (const code of languages) {
      const option = document.createElement("option");
      option.value = code;
      option.textContent = languageLabel(code);
      select.append(option);
    }
    select.querySelector('option[value="auto"]').disabled = languages.length < 2;
    document.getElementById("language-default").textContent =
      model.language ? `server default: ${model.language === "auto" ? "auto" : languageLabel(model.language)}`
                     : "server default: none (no language models)";
  } catch (_) { /* offline or refused: the server's default is still there */ }
}

// "?decoder=beam&language=fr" from the selectors; "" when both are left at the server's default.
function readingQuery() {
  const params = new URLSearchParams();
  for (const name of ["decoder", "language"]) {
    const value = document.getElementById(name).value;
    if (value) params.set(name, value);
  }
  const query = params.toString();
  return query ? `?${query}` : "";
}

loadLanguages();
