// The docs site in a real browser (tests/project/test_docs_site.py runs this): Debian's headless Chromium
// driven by playwright-core (package.json). Visits every page reachable from the index by its
// links, records console errors, uncaught page errors and failed requests, searches the site,
// and saves screenshots. Prints one JSON report on stdout; the Python test asserts on it.
//
// usage: node tests/docs_site_browser.js BASE_URL SCREENSHOT_DIR QUERY GUIDE_PATH
// QUERY is a spec field: the search must find it on reference/spec/, and the hit lands on it.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");

const [baseUrl, shotDir, query, guidePath] = process.argv.slice(2);
const CHROMIUM = "/usr/bin/chromium"; // Debian's package (make browser-bootstrap)
// No network but loopback here: nothing in the background may reach out.
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

function pagePath(url) {
  const u = new URL(url);
  return u.pathname;
}

async function main() {
  const t0 = Date.now();
  const timings = {};
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "mlcc-docs-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 900 },
  });
  const problems = [];
  const page = await context.newPage();
  let current = "";
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`${current}: console error: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`${current}: uncaught: ${e.message}`));
  const origin = new URL(baseUrl).origin;
  page.on("request", (r) => {
    // Everything the site needs is in the site: no CDN, no web font service.
    if (!r.url().startsWith(origin) && !r.url().startsWith("data:"))
      problems.push(`${current}: request outside the site: ${r.url()}`);
  });
  page.on("requestfailed", (r) => {
    const error = r.failure()?.errorText;
    // The crawl leaving a page cancels what it was still fetching of the site's own files
    // (the search worker's index, a web font): net::ERR_ABORTED is the test's doing, not the
    // site's. A file the site lacks still fails, as an HTTP 404 (below).
    if (error === "net::ERR_ABORTED" && r.url().startsWith(`${origin}/`)) return;
    problems.push(`${current}: request failed: ${r.url()} (${error})`);
  });
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`${current}: HTTP ${r.status()}: ${r.url()}`);
  });

  // Every page reachable from the index by following its links (same origin, HTML pages).
  const start = new URL(baseUrl).href;
  const seen = new Set([pagePath(start)]);
  const queue = [start];
  const visited = [];
  while (queue.length) {
    const url = queue.shift();
    current = pagePath(url);
    await page.goto(url, { waitUntil: "load" });
    visited.push(current);
    const hrefs = await page.$$eval("a[href]", (as) => as.map((a) => a.href));
    for (const href of hrefs) {
      const u = new URL(href);
      if (u.origin !== origin) continue;
      const p = u.pathname;
      if (!(p.endsWith("/") || p.endsWith(".html")) || seen.has(p)) continue;
      seen.add(p);
      queue.push(u.origin + p);
    }
  }

  timings.crawl_ms = Date.now() - t0;
  // Screenshots for review: the index and one guide.
  fs.mkdirSync(shotDir, { recursive: true });
  const shots = [];
  for (const [name, rel] of [["index", ""], ["guide", guidePath]]) {
    current = "/" + rel;
    await page.goto(new URL(rel, start).href, { waitUntil: "load" });
    const file = path.join(shotDir, `${name}.png`);
    await page.screenshot({ path: file, fullPage: false });
    shots.push(file);
  }

  // The theme's search: open its dialog from the index, type, read the hits, follow the first.
  current = "/ (search)";
  await page.goto(start, { waitUntil: "load" });
  await page.click('a[data-bs-target="#mkdocs_search_modal"]');
  // The theme searches on keyup: type the query as a person would.
  const box = page.locator("#mkdocs-search-query");
  await box.pressSequentially(query);
  // The index loads in a worker: keys typed before it is ready search nothing, and the theme
  // searches again only on the next keyup. A loaded machine (CI's two cores, the suite beside
  // it) can take seconds: press End (a keyup, the text unchanged) until hits show, up to 60 s.
  for (let tries = 0; ; tries++) {
    try {
      await page.waitForSelector("#mkdocs-search-results article a", { timeout: 5000 });
      break;
    } catch (error) {
      if (tries >= 11) throw error;
      await box.press("End");
    }
  }
  const hits = await page.$$eval("#mkdocs-search-results article a", (as) =>
    as.map((a) => ({ href: a.href, text: a.textContent.trim() })),
  );
  // The hit of the field itself: its heading on reference/spec/ is the field's dotted path.
  const target = hits.findIndex(
    (h) =>
      new URL(h.href).pathname === "/reference/spec/" &&
      (h.text === query || h.text.endsWith(`.${query}`)),
  );
  let landed = null;
  let landedHasTarget = false;
  if (target >= 0) {
    await page.locator("#mkdocs-search-results article a").nth(target).click();
    await page.waitForURL((u) => u.pathname === "/reference/spec/");
    landed = page.url();
    const id = new URL(landed).hash.slice(1);
    landedHasTarget = id !== "" && (await page.locator(`[id="${id}"]`).count()) === 1;
  }
  timings.total_ms = Date.now() - t0;
  await context.close();
  fs.rmSync(userDataDir, { recursive: true, force: true });
  process.stdout.write(
    JSON.stringify({
      visited,
      problems,
      screenshots: shots,
      timings,
      search: { query, hits, landed, landed_has_target: landedHasTarget },
    }),
  );
}

main().catch((e) => {
  process.stderr.write(String(e.stack || e) + "\n");
  process.exit(1);
});
