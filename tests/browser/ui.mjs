// The web pages in a real browser (Debian's chromium, driven by playwright-core). Run by
// tests/browser.rs, which starts the local registry, publishes the fixtures and a canary
// server, and passes:
//   BASE_URL     https://127.0.0.1:PORT of the local registry
//   TOKEN        a token scoped to the `acme` modules and registry.terraform.io/hashicorp/*
//   CANARY       HOST:PORT of a server no page may ever reach (the Rust side counts its hits)
//   SCREENSHOTS  a directory for the screenshots
//   CHROMIUM     the browser binary
// Every check that fails throws; the exit status is what the Rust test asserts.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

const { BASE_URL, TOKEN, CANARY, SCREENSHOTS, CHROMIUM } = process.env;
for (const [name, value] of Object.entries({ BASE_URL, TOKEN, CANARY, SCREENSHOTS, CHROMIUM })) {
  assert.ok(value, `${name} is set`);
}
const PAGE_MAX = 100_000;
const CSP = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; " +
  "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
const host = new URL(BASE_URL).host;

const profile = fs.mkdtempSync(path.join(os.tmpdir(), "registry-chromium-"));
// launchPersistentContext takes the fresh profile directory itself (not as an argument).
const launch = (javaScriptEnabled) => chromium.launchPersistentContext(
  fs.mkdtempSync(path.join(profile, "p-")),
  {
    executablePath: CHROMIUM,
    headless: true,
    ignoreHTTPSErrors: true, // the local registry's own CA; the origin is still https
    javaScriptEnabled,
    viewport: { width: 1280, height: 900 },
    args: [
      "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  },
);

const dialogs = [];
const foreign = [];
const pages = [];
/** A page that records dialogs, requests that leave the registry, and every answer's size. */
async function watched(context) {
  const page = await context.newPage();
  page.on("dialog", async (d) => { dialogs.push(`${d.type()}: ${d.message()}`); await d.dismiss(); });
  // A request the CSP blocks still shows here, as one that failed before any connection;
  // the canary server (counted by the Rust side) is what proves none got out.
  page.on("request", (r) => { if (!r.url().startsWith(BASE_URL)) foreign.push({ url: r.url(), outcome: "pending" }); });
  page.on("requestfailed", (r) => {
    const f = foreign.find((x) => x.url === r.url() && x.outcome === "pending");
    if (f) f.outcome = r.failure()?.errorText ?? "failed";
  });
  page.on("requestfinished", (r) => {
    const f = foreign.find((x) => x.url === r.url() && x.outcome === "pending");
    if (f) f.outcome = "finished";
  });
  page.on("response", async (r) => {
    if (r.request().resourceType() !== "document") return;
    const body = await r.body().catch(() => Buffer.alloc(0));
    pages.push({ url: r.url(), status: r.status(), bytes: body.length, csp: r.headers()["content-security-policy"] });
  });
  return page;
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: false });
}

const started = Date.now();
const step = (name) => console.log(`browser: ${((Date.now() - started) / 1000).toFixed(1)} s: ${name}`);

// --- With JavaScript -----------------------------------------------------------------------
const context = await launch(true);
await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: BASE_URL });
const page = await watched(context);

step("anonymous: nothing is public, the catalog says to sign in");
await page.goto(`${BASE_URL}/`);
assert.match(await page.locator("main").innerText(), /Nothing here is public/);
assert.equal(await page.locator("text=acme/vpc/aws").count(), 0);

step("sign in with a token");
await page.click("a.account");
assert.equal(new URL(page.url()).pathname, "/ui/sign-in");
await shot(page, "sign-in");
await page.fill("#token", TOKEN);
await Promise.all([page.waitForNavigation(), page.click("form.sign-in button[type=submit]")]);
assert.equal(new URL(page.url()).pathname, "/", await page.locator("main").innerText());
const cookies = await context.cookies(BASE_URL);
const session = cookies.find((c) => c.name === "__Host-registry-token");
assert.ok(session, "the sign-in cookie is kept");
assert.equal(session.httpOnly, true);
assert.equal(session.secure, true);
assert.equal(session.sameSite, "Strict");
assert.equal(await page.evaluate(() => document.cookie.includes("registry-token")), false, "scripts cannot read it");

step("the catalog shows what the token may read, and nothing of namespace globex");
const catalog = await page.locator("main").innerText();
assert.match(catalog, /acme\/vpc\/aws/);
assert.match(catalog, /registry\.terraform\.io\/hashicorp\/null/);
assert.doesNotMatch(catalog, /globex/);
await shot(page, "catalog");

step("the catalog sorted by downloads, and back");
await Promise.all([page.waitForNavigation(), page.click("#modules p.sort a")]);
assert.equal(new URL(page.url()).searchParams.get("sort"), "downloads");
assert.match(await page.locator("#modules p.sort").innerText(), /Sorted by most downloaded/);
const headers = await page.locator("#modules table th").allInnerTexts();
assert.ok(headers.includes("Downloads"), JSON.stringify(headers));
assert.match(await page.locator("main").innerText(), /acme\/vpc\/aws/);
await Promise.all([page.waitForNavigation(), page.click("#modules p.sort a")]);
assert.equal(new URL(page.url()).searchParams.get("sort"), null);

step("search");
await page.fill("header form.search input[name=q]", "network");
await Promise.all([page.waitForNavigation(), page.press("header form.search input[name=q]", "Enter")]);
assert.equal(new URL(page.url()).searchParams.get("q"), "network");
const found = await page.locator("#modules table a").allInnerTexts();
assert.deepEqual(found, ["acme/vpc/aws"]);
await page.goto(`${BASE_URL}/?q=globex`);
assert.equal(await page.locator("#modules table a").count(), 0, "a search finds nothing out of scope");
await page.goto(`${BASE_URL}/?q=secret`);
assert.equal(await page.locator("#modules table a").count(), 0);

step("open a module, read its inputs table");
await page.goto(`${BASE_URL}/?q=network`);
await Promise.all([page.waitForNavigation(), page.click("#modules table a >> text=acme/vpc/aws")]);
assert.equal(new URL(page.url()).pathname, "/ui/modules/acme/vpc/aws");
const rows = await page.$$eval("#inputs table tbody tr", (trs) =>
  trs.map((tr) => Array.from(tr.querySelectorAll("td")).map((td) => td.innerText.trim())));
const cidr = rows.find((r) => r[0] === "cidr_block");
assert.ok(cidr, `an input row for cidr_block in ${JSON.stringify(rows)}`);
assert.deepEqual(cidr, ["cidr_block", "string", "The VPC's CIDR block.", "", "yes"]);
const azs = rows.find((r) => r[0] === "azs");
assert.deepEqual(azs, ["azs", "list(string)", "Availability zones.", '["eu-west-1a"]', "no"]);
const token = rows.find((r) => r[0].startsWith("token"));
assert.match(token[0], /sensitive/);
assert.match(await page.locator("#readme").innerText(), /A network with public and private subnets/);
assert.match(await page.locator("#submodules").innerText(), /modules\/subnet/);
await shot(page, "module");

step("changes that break no caller read as good news, out of the alarm colour");
// 1.2.0 added an optional input to 1.1.0.
assert.equal(await page.locator("#changes p.meta").innerText(), "1 change, none breaking");
assert.equal(await page.locator("#changes .breaking").count(), 0, "no alarm on a page with no break");
const calm = await page.$eval("#changes span.compatible", (e) => getComputedStyle(e).color);
assert.equal(calm, "rgb(30, 107, 52)", "none breaking in the calm colour");
await page.goto(`${BASE_URL}/ui/modules/acme/vpc/aws/1.2.0/from/1.1.0`);
assert.equal(await page.locator("#changes span.breaking").count(), 0);
assert.match(await page.locator("#changes").innerText(), /none breaking/);

step("a long input name is shown whole, wide and on a phone-sized screen");
const LONG = "instance_size_for_the_primary_database_cluster";
await page.goto(`${BASE_URL}/ui/modules/acme/vpc/aws`);
for (const width of [1280, 375]) {
  await page.setViewportSize({ width, height: 900 });
  const layout = await page.$eval("#inputs table", (table) => {
    const cells = Array.from(table.querySelectorAll("tbody tr td:first-child"));
    return {
      names: cells.map((td) => td.querySelector("code").innerText),
      cut: cells.flatMap((td) => {
        const code = td.querySelector("code");
        const [c, t] = [code.getBoundingClientRect(), td.getBoundingClientRect()];
        const style = getComputedStyle(code);
        const inside = c.left >= t.left - 0.5 && c.right <= t.right + 0.5 && c.bottom <= t.bottom + 0.5;
        const whole = td.scrollWidth <= td.clientWidth && code.scrollWidth <= code.clientWidth + 0.5;
        return inside && whole && style.textOverflow !== "ellipsis" && style.overflow === "visible"
          ? [] : [`${code.innerText}: ${JSON.stringify({ c, t, sw: td.scrollWidth, cw: td.clientWidth })}`];
      }),
      // The page itself never scrolls sideways: a wide table scrolls in its own box.
      page: [document.documentElement.scrollWidth, window.innerWidth],
      onScreen: cells.every((td) => td.getBoundingClientRect().right <= window.innerWidth),
    };
  });
  assert.ok(layout.names.includes(LONG), `${width}: ${LONG} whole among ${JSON.stringify(layout.names)}`);
  assert.deepEqual(layout.cut, [], `${width}: a name cut or overflowing its cell`);
  assert.ok(layout.page[0] <= layout.page[1], `${width}: the page scrolls sideways: ${layout.page}`);
  assert.ok(layout.onScreen, `${width}: a name cell past the screen's edge`);
  await page.locator("#inputs").scrollIntoViewIfNeeded();
  await shot(page, `module-inputs-${width}`);
}
await page.setViewportSize({ width: 1280, height: 900 });

step("copy the usage snippet");
await page.click("#usage button.copy");
await page.waitForFunction(() => document.querySelector("#usage button.copy").textContent === "Copied");
const copied = await page.evaluate(() => navigator.clipboard.readText());
assert.match(copied, new RegExp(`source  = "${host.replace(/\./g, "\\.")}/acme/vpc/aws"`));
assert.match(copied, /version = "~> 1\.2"/);
assert.match(copied, /# cidr_block = string/);

step("open the provider page");
await page.goto(`${BASE_URL}/`);
await Promise.all([page.waitForNavigation(), page.click("#providers table a")]);
assert.equal(new URL(page.url()).pathname, "/ui/providers/registry.terraform.io/hashicorp/null");
const platforms = await page.locator("#platforms").innerText();
assert.match(platforms, /linux_amd64/);
assert.match(platforms, /h1:/);
assert.match(platforms, /zh:[0-9a-f]{64}/);
assert.match(await page.locator("#mirror-snippet").innerText(), new RegExp(`url     = "https://${host.replace(/\./g, "\\.")}/v1/mirror/"`));
await shot(page, "provider");

step("scope isolation: pages of namespace globex are the same 404 as absent ones");
for (const p of ["/ui/modules/globex/secret/aws", "/ui/modules/globex/secret/aws/1.0.0", "/ui/modules/nobody/none/aws"]) {
  const r = await page.goto(`${BASE_URL}${p}`);
  assert.equal(r.status(), 404, p);
  assert.doesNotMatch(await page.content(), /Hidden treasure/);
}

step("the XSS corpus renders inert");
const xss = await page.goto(`${BASE_URL}/ui/modules/acme/xss/aws`);
assert.equal(xss.status(), 200);
assert.equal(xss.headers()["content-security-policy"], CSP);
await page.waitForTimeout(1500); // time for anything that would fire (onload, refresh, timers)
assert.equal(new URL(page.url()).pathname, "/ui/modules/acme/xss/aws", "no redirect");
assert.equal(await page.evaluate(() => window.__xss), undefined, "no injected script ran");
const hrefs = await page.$$eval("a[href], [src], [action], [formaction]", (els) =>
  els.flatMap((e) => ["href", "src", "action", "formaction"].map((a) => e.getAttribute(a)).filter(Boolean)));
for (const h of hrefs) assert.doesNotMatch(h.trim().toLowerCase(), /^(javascript|data|vbscript):/, h);
const handlers = await page.$$eval("*", (els) =>
  els.flatMap((e) => Array.from(e.attributes).filter((a) => a.name.startsWith("on")).map((a) => `${e.tagName}.${a.name}`)));
assert.deepEqual(handlers, []);
assert.equal(await page.locator("main script, main iframe, main object, main embed, main svg, main form").count(), 0);
// Hover and click what the payloads would have hooked, inside the README only.
for (const el of await page.locator("#readme p, #readme div, #readme img, #readme details").all()) {
  await el.hover({ timeout: 500 }).catch(() => {});
}
const shownDescription = await page.locator("#inputs").innerText();
assert.match(shownDescription, /<img src=x onerror=/, "a hostile description is shown as text");
await shot(page, "xss");

step("sign out");
await page.goto(`${BASE_URL}/`);
await Promise.all([page.waitForNavigation(), page.click("form.account button")]);
assert.equal((await context.cookies(BASE_URL)).some((c) => c.name === "__Host-registry-token"), false);
assert.match(await page.locator("main").innerText(), /Nothing here is public/);
await context.close();

// --- Without JavaScript --------------------------------------------------------------------
step("without JavaScript: sign in, read a module, the snippet is there to select");
const plain = await launch(false);
const page2 = await watched(plain);
await page2.goto(`${BASE_URL}/ui/sign-in`);
await page2.fill("#token", TOKEN);
await Promise.all([page2.waitForNavigation(), page2.click("form.sign-in button[type=submit]")]);
assert.match(await page2.locator("main").innerText(), /acme\/vpc\/aws/);
await page2.goto(`${BASE_URL}/ui/modules/acme/vpc/aws`);
assert.match(await page2.locator("#usage-snippet").innerText(), /source  = /);
assert.equal(await page2.locator("button.copy").count(), 0, "no dead copy button without the script");
await plain.close();

// --- What every page did -------------------------------------------------------------------
assert.deepEqual(dialogs, [], "no dialog opened");
for (const f of foreign) assert.match(f.outcome, /^csp$|BLOCKED_BY_CSP/, `${f.url}: ${f.outcome}`);
console.log(`browser: ${foreign.length} requests to other origins, each blocked by the CSP: ${foreign.map((f) => f.url).join(", ")}`);
for (const p of pages) {
  assert.ok(p.bytes < PAGE_MAX, `${p.url}: ${p.bytes} bytes`);
  assert.equal(p.csp, CSP, `${p.url}: the Content-Security-Policy`);
}
console.log(`browser: ok: ${pages.length} pages, largest ${Math.max(...pages.map((p) => p.bytes))} bytes`);
fs.rmSync(profile, { recursive: true, force: true });
