// The Teams card check: every golden card the Go tests write (notify/teams/testdata/cards, one
// Teams Workflows message each) is parsed and rendered by the Adaptive Cards JavaScript library,
// the renderer Teams' own clients are built on. A card fails when:
//   - the message is not the envelope Workflows expects (type "message", one attachment of
//     contentType application/vnd.microsoft.card.adaptive, contentUrl null);
//   - its version is above 1.5 (what Teams renders) or not the same in every card;
//   - parsing it at its own version logs any event (an unknown element or action type, a
//     property or value newer than the card's version, an invalid value);
//   - validateProperties reports anything (too many actions, an empty collection, ...);
//   - a property does not survive the library's round trip (parse, then toJSON): a property the
//     library does not know is silently ignored by Teams too (Teams' own "msteams" excepted);
//   - rendering it (in jsdom, Markdown through markdown-it) throws, returns nothing, warns or
//     logs an error, or the rendered text lacks the card's header;
//   - an Action.OpenUrl's url is not an absolute http(s) URL.
// Usage: node check.cjs [--bad] DIR (--bad: every card must fail: the negative fixtures in
// bad/, so the check itself is known to refuse what it claims to). Prints one line per card and "N passed, N failed"; exits 1 on any
// failure or when DIR holds no card.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { JSDOM } = require("jsdom");

const dom = new JSDOM("<!DOCTYPE html><html><head></head><body></body></html>", { pretendToBeVisual: true });
for (const key of Object.getOwnPropertyNames(dom.window)) {
  if (!(key in globalThis)) {
    try {
      globalThis[key] = dom.window[key];
    } catch {
      // a getter jsdom does not let us copy; the renderer does not use it
    }
  }
}
dom.window.markdownit = require("markdown-it");
const AC = require("adaptivecards/dist/adaptivecards.js");

const warnings = [];
for (const level of ["warn", "error"]) {
  console[level] = (...args) => warnings.push(`console.${level}: ${args.map(String).join(" ")}`);
}
const say = (line) => process.stdout.write(line + "\n");

const maxTeamsVersion = new AC.Version(1, 5);
const teamsOnly = new Set(["msteams"]); // Teams' own card properties, unknown to the library

// lost lists the properties of src that are missing or different in back (the round trip).
function lost(src, back, where, out) {
  if (Array.isArray(src)) {
    if (!Array.isArray(back) || back.length !== src.length) {
      out.push(`${where}: ${Array.isArray(back) ? back.length : "no"} items after the round trip, ${src.length} before`);
      return out;
    }
    src.forEach((v, i) => lost(v, back[i], `${where}[${i}]`, out));
    return out;
  }
  if (src !== null && typeof src === "object") {
    for (const [k, v] of Object.entries(src)) {
      if (where === "" && teamsOnly.has(k)) continue;
      if (back === null || typeof back !== "object" || !(k in back)) {
        // A value equal to the library's default is dropped by toJSON; anything else is a
        // property the library (and so Teams) ignores.
        if (!isDefault(k, v)) out.push(`${where}.${k}: ignored by the library (unknown property, or a value it dropped): ${JSON.stringify(v)}`);
        continue;
      }
      lost(v, back[k], `${where}.${k}`, out);
    }
    return out;
  }
  if (src !== back && String(src).toLowerCase() !== String(back).toLowerCase()) {
    out.push(`${where}: ${JSON.stringify(src)} became ${JSON.stringify(back)}`);
  }
  return out;
}

// Values toJSON leaves out because they are the library's defaults.
const defaults = { wrap: false, isSubtle: false, separator: false, bleed: false, spacing: "default", weight: "default", size: "default", color: "default" };
function isDefault(key, value) {
  return key in defaults && String(defaults[key]).toLowerCase() === String(value).toLowerCase();
}

function texts(el, out) {
  if (Array.isArray(el)) el.forEach((e) => texts(e, out));
  else if (el && typeof el === "object") {
    if (typeof el.text === "string") out.push(el.text);
    for (const v of Object.values(el)) if (v && typeof v === "object") texts(v, out);
  }
  return out;
}

function urls(el, out) {
  if (Array.isArray(el)) el.forEach((e) => urls(e, out));
  else if (el && typeof el === "object") {
    if (el.type === "Action.OpenUrl") out.push(el.url);
    for (const v of Object.values(el)) if (v && typeof v === "object") urls(v, out);
  }
  return out;
}

function checkCard(file, versions) {
  const problems = [];
  let msg;
  try {
    msg = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    return [`not JSON: ${e.message}`];
  }
  if (msg.type !== "message") problems.push(`type is ${JSON.stringify(msg.type)}, not "message"`);
  if (!Array.isArray(msg.attachments) || msg.attachments.length !== 1) {
    return problems.concat(["want exactly one attachment"]);
  }
  const att = msg.attachments[0];
  if (att.contentType !== "application/vnd.microsoft.card.adaptive") problems.push(`contentType ${JSON.stringify(att.contentType)}`);
  if (!("contentUrl" in att) || att.contentUrl !== null) problems.push("contentUrl must be null");
  const src = att.content;
  if (!src || src.type !== "AdaptiveCard") return problems.concat(["content is not an AdaptiveCard"]);

  const version = AC.Version.parse(src.version, new AC.SerializationContext());
  if (!version || !version.isValid) return problems.concat([`version ${JSON.stringify(src.version)} does not parse`]);
  if (version.compareTo(maxTeamsVersion) > 0) problems.push(`version ${src.version} is above 1.5, the newest Teams renders`);
  versions.add(src.version);

  const ctx = new AC.SerializationContext(version);
  const card = new AC.AdaptiveCard();
  card.parse(src, ctx);
  for (let i = 0; i < ctx.eventCount; i++) {
    const ev = ctx.getEventAt(i);
    problems.push(`parse: ${AC.ValidationEvent[ev.event]}: ${ev.message}`);
  }
  const validation = card.validateProperties();
  for (const ev of validation.validationEvents) {
    problems.push(`validate: ${AC.ValidationEvent[ev.event]}: ${ev.message}`);
  }
  const back = card.toJSON(new AC.SerializationContext(version));
  problems.push(...lost(src, back, "", []));

  for (const u of urls(src, [])) {
    let ok = false;
    try {
      const p = new URL(u);
      ok = p.protocol === "https:" || p.protocol === "http:";
    } catch {
      ok = false;
    }
    if (!ok) problems.push(`Action.OpenUrl url ${JSON.stringify(u)} is not an absolute http(s) URL`);
  }

  warnings.length = 0;
  let rendered;
  try {
    rendered = card.render();
  } catch (e) {
    problems.push(`render threw: ${e.stack || e}`);
  }
  if (!rendered) {
    problems.push("render returned nothing");
  } else {
    document.body.replaceChildren(rendered);
    const header = texts(src.body, [])[0];
    const shown = rendered.textContent;
    const plainHeader = header ? header.replace(/\\(.)/g, "$1") : "";
    if (!header || !shown.includes(plainHeader)) problems.push(`the rendered card does not show its header ${JSON.stringify(plainHeader)}`);
  }
  problems.push(...warnings.map((w) => `render: ${w}`));
  return problems;
}

function main() {
  // --bad DIR: every card in DIR must fail (the check's own negative fixtures, bad/).
  const bad = process.argv[2] === "--bad";
  const dir = process.argv[bad ? 3 : 2];
  if (!dir) {
    say("usage: node check.cjs [--bad] DIR");
    process.exit(2);
  }
  const files = fs.readdirSync(dir).filter((f) => f.endsWith(".json")).sort();
  if (files.length === 0) {
    say(`no cards (*.json) in ${dir}: run go test ./notify/teams/ -update first`);
    process.exit(1);
  }
  const versions = new Set();
  let passed = 0;
  let failed = 0;
  for (const f of files) {
    const problems = checkCard(path.join(dir, f), bad ? new Set() : versions);
    if (bad) {
      if (problems.length > 0) {
        passed++;
        say(`ok   ${f} is refused: ${problems[0]}`);
      } else {
        failed++;
        say(`FAIL ${f} passed the check; it must not`);
      }
      continue;
    }
    if (problems.length === 0) {
      passed++;
      say(`ok   ${f}`);
    } else {
      failed++;
      say(`FAIL ${f}`);
      for (const p of problems) say(`     ${p}`);
    }
  }
  if (versions.size > 1) {
    failed++;
    say(`FAIL the cards declare several versions: ${[...versions].join(", ")}`);
  }
  if (!bad) say(`adaptivecards ${require("adaptivecards/package.json").version}, card version ${[...versions].join(", ")}`);
  say(`${passed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
}

main();
