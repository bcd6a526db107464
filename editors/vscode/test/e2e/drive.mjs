// Drives the Claude Relay extension in code-server's web workbench with
// headless Chromium (playwright-core), as a person would: the command
// palette, the prompt's input box, the approval notification's buttons, the
// run's output channel, the Runs view and the integrated terminal.
//
// The Go test editors/vscode/e2e starts code-server, the scripted Messages API
// and the helper's environment, then runs this script with one argument: a
// JSON file describing the scenario ("Config" below). Each step prints one
// JSON line on stdout, {"step","ok","ms","screenshot"[,"error"][,"detail"]},
// so the test can log where it got and which screenshot shows it; the first
// failing step ends the script with exit status 1. Everything else (the page's
// console, the browser's own errors) goes to stderr. The test checks what only
// it can see (the backend's events, the denied file) after this script ends.
// After a step named in holdAfter passes, the script waits for a line on
// stdin: the test checks what it can see at that point (the processes that
// run), then lets it go on.
//
// Config:
//   url          the workbench URL (http://127.0.0.1:PORT/?folder=...)
//   chromium     Chromium's path (Debian's /usr/bin/chromium)
//   playwright   the playwright-core package directory
//   shots        where screenshots go
//   steps        which scenario parts to run, in order: "idle", "bash", "write", "terminal"
//   holdAfter    step names after which to wait for a line on stdin
//   bash         {prompt, command, output[]}: the prompt, the whole command
//                the approval must show, lines the run's output must show
//   write        {prompt, path}: the prompt and the path the approval shows
//   terminal     {prompt, expect}: the prompt and a text the terminal shows
//   waitMs       how long one wait may take (default 60000)
import { createRequire } from "node:module";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";

const RUN_IN_BACKGROUND = "Claude Relay: Run Prompt in Background";
const RUN_IN_TERMINAL = "Claude Relay: Run in Terminal";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const waitMs = config.waitMs ?? 60_000;
const require = createRequire(import.meta.url);
const { chromium } = require(config.playwright);

mkdirSync(config.shots, { recursive: true });
let shotCount = 0;

function emit(obj) {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

function log(...args) {
  process.stderr.write(`drive: ${args.join(" ")}\n`);
}

/**
 * Polls fn until it returns {done: value} (then returns value) or ms pass.
 * Anything else fn returns is what it saw, quoted in the timeout's error.
 */
async function until(what, fn, ms = waitMs) {
  const deadline = Date.now() + ms;
  let seen;
  for (;;) {
    try {
      const r = await fn();
      if (r && typeof r === "object" && "done" in r) {
        return r.done;
      }
      seen = r;
    } catch (err) {
      seen = `(${err.message.split("\n", 1)[0]})`;
    }
    if (Date.now() > deadline) {
      const tail = typeof seen === "string" && seen.trim() !== "" ? `; last seen: ${seen.slice(-1500)}` : "";
      throw new Error(`timed out after ${ms} ms waiting for ${what}${tail}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function shoot(page, name) {
  shotCount++;
  const file = join(config.shots, `${String(shotCount).padStart(2, "0")}-${name}.png`);
  try {
    await page.screenshot({ path: file, timeout: 15_000 });
    return file;
  } catch (err) {
    log(`screenshot ${file} failed: ${err.message}`);
    return "";
  }
}

let stdinLines;

/** Waits for the test's line on stdin (it checks something first). */
async function hold(name) {
  stdinLines ??= createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  log(`held after ${name}: waiting for the test`);
  await stdinLines.next();
}

/** Runs one step: its screenshot and result line, whether it passes or not. */
async function step(page, name, fn) {
  const began = Date.now();
  try {
    const detail = await fn();
    const screenshot = await shoot(page, name);
    emit({ step: name, ok: true, ms: Date.now() - began, screenshot, ...(detail ? { detail } : {}) });
  } catch (err) {
    const screenshot = await shoot(page, `${name}-failed`);
    emit({ step: name, ok: false, ms: Date.now() - began, screenshot, error: err.message });
    throw err;
  }
  if (config.holdAfter?.includes(name)) {
    await hold(name);
  }
}

/** The quick input widget (command palette, input box) when it is shown. */
function quickInput(page) {
  return page.locator(".quick-input-widget").filter({ visible: true });
}

/**
 * Runs a command from the palette by its exact title: F1, type the title,
 * then pick the row whose label is that title (not merely the first match).
 */
async function runCommand(page, title) {
  await pickCommand(page, title, new RegExp(`^${escapeRegExp(title)}$`));
}

/** F1, type query, click the first row whose label matches label. */
async function pickCommand(page, query, label) {
  await page.keyboard.press("Escape"); // close whatever quick input is open
  await page.keyboard.press("F1");
  const input = quickInput(page).locator(".quick-input-box input");
  await input.waitFor({ state: "visible", timeout: waitMs });
  await input.fill(`>${query}`);
  const rows = quickInput(page).locator(".monaco-list-row");
  const row = rows.filter({ has: page.locator(".label-name", { hasText: label }) });
  let polls = 0;
  await until(`the palette to list ${label}`, async () => {
    if ((await row.count()) > 0) {
      return { done: true };
    }
    // The palette lists the commands known when the query changed: one
    // contributed since (the extension host still starting) shows only
    // after the query is typed again.
    if (++polls % 8 === 0) {
      await input.fill(">");
      await input.fill(`>${query}`);
    }
    return (await rows.allInnerTexts()).join(" | ");
  });
  await row.first().click();
}

function escapeRegExp(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Answers the input box a command opens (not the palette: its value has no ">"). */
async function answerInputBox(page, text) {
  const input = quickInput(page).locator(".quick-input-box input");
  await until("the prompt's input box", async () => {
    if (!(await input.isVisible())) {
      return false;
    }
    const value = await input.inputValue({ timeout: 1_000 });
    return value.startsWith(">") ? `the palette: ${value}` : { done: true };
  }, 15_000); // CONTRACT §9: the prompt is asked within 15 s
  await input.fill(text);
  await input.press("Enter");
  await until("the input box to close", async () => ((await input.isVisible()) ? `open: ${await input.inputValue({ timeout: 1_000 })}` : { done: true }));
}

/**
 * The approval that shows `text`: a notification toast, or a modal dialog
 * when the extension chose one for a long command. A toast whose buttons are
 * not clicked hides after a while (VS Code's rule for warnings): then it is
 * in the notification center, which is opened to find it.
 */
async function approval(page, text) {
  const toast = page.locator(".notifications-toasts .notification-toast").filter({ hasText: text });
  const center = page.locator(".notifications-center .notification-list-item").filter({ hasText: text });
  const dialog = page.locator(".monaco-dialog-box").filter({ hasText: text });
  const began = Date.now();
  let centerOpened = false;
  return until(`an approval showing "${text}"`, async () => {
    for (const where of [toast, dialog, center]) {
      if ((await where.count()) > 0) {
        return { done: where.first() };
      }
    }
    if (!centerOpened && Date.now() - began > 20_000) {
      centerOpened = true;
      log("no approval toast after 20 s: looking in the notification center");
      await runCommand(page, "Notifications: Show Notifications");
    }
    return (await page.locator(".notifications-toasts, .notifications-center, .monaco-dialog-box").allInnerTexts()).join(" | ");
  });
}

async function buttonLabels(container) {
  const labels = await container.locator(".monaco-button").allInnerTexts();
  return labels.map((l) => l.trim()).filter(Boolean);
}

async function click(container, label) {
  await container.locator(".monaco-button", { hasText: new RegExp(`^${escapeRegExp(label)}$`) }).first().click();
}

/**
 * The text of the Output panel's editor, in line order. The panel is
 * maximized first so that a whole run's output fits (the editor renders only
 * its visible lines).
 */
async function outputText(page) {
  const lines = await page.locator(".part.panel .view-lines .view-line").evaluateAll((els) =>
    els
      .map((el) => ({ top: parseFloat(el.style.top || "0"), text: el.textContent ?? "" }))
      .sort((a, b) => a.top - b.top)
      .map((l) => l.text.replace(/\u00a0/g, " ")),
  );
  return lines.join("\n");
}

/** The name of the output channel the Output panel shows. */
async function outputChannel(page) {
  const texts = await page
    .locator(".part.panel .monaco-select-box, .part.panel select")
    .evaluateAll((els) => els.map((el) => (el instanceof HTMLSelectElement ? el.selectedOptions[0]?.textContent : el.getAttribute("title") ?? el.textContent) ?? ""));
  return texts.filter(Boolean).join(" | ");
}

let panelMaximized = false;

/** Maximizes the panel once (the command toggles, so it is not run twice). */
async function maximizePanel(page) {
  if (!panelMaximized) {
    await runCommand(page, "View: Toggle Maximized Panel");
    panelMaximized = true;
  }
}

/** Waits for the output panel to show a "Claude Relay: …" run channel whose text has every one of wants. */
async function waitOutput(page, wants, what) {
  return until(what, async () => {
    const channel = await outputChannel(page);
    if (/Claude Relay: [0-9a-f]{8}/.test(channel)) {
      await maximizePanel(page);
    }
    const text = await outputText(page);
    if (wants.every((w) => (w instanceof RegExp ? w.test(text) : text.includes(w)))) {
      return { done: { channel, text } };
    }
    return `[${channel}] ${text}`;
  });
}

/** A Runs view row whose text has every one of wants; opens the view first. */
async function runsRow(page, wants) {
  // VS Code names a view's focus command "<container>: Focus on <view> View".
  await pickCommand(page, "Focus on Claude Relay Runs View", /Focus on Claude Relay Runs View$/);
  const rows = page.locator(".pane").filter({ has: page.locator(".pane-header", { hasText: /Runs/i }) }).locator(".monaco-list-row");
  return until(`a Runs view row with ${wants.join(", ")}`, async () => {
    const texts = (await rows.evaluateAll((els) => els.map((el) => `${el.textContent ?? ""} [${el.getAttribute("aria-label") ?? ""}]`))).map((t) =>
      t.replace(/\s+/g, " "),
    );
    const hit = texts.find((t) => wants.every((w) => (w instanceof RegExp ? w.test(t) : t.includes(w))));
    return hit !== undefined ? { done: hit } : texts.join(" | ");
  });
}

/**
 * Opens the Runs view, which activates the extension (its status bar item
 * shows) and lists this window's runs: none, and no helper needed. Then a
 * command that needs no helper either (Show Pending Approvals), a round trip
 * through the extension host. The test holds the script here to check that
 * no helper and no CLI discovery run, and what the status bar said.
 */
async function scenarioIdle(page) {
  await step(page, "idle", async () => {
    await pickCommand(page, "Focus on Claude Relay Runs View", /Focus on Claude Relay Runs View$/);
    const pane = page.locator(".pane").filter({ has: page.locator(".pane-header", { hasText: /Claude Relay Runs/ }) });
    await pane.getByText("No runs yet").first().waitFor({ state: "visible", timeout: waitMs });
    await runCommand(page, "Claude Relay: Show Pending Approvals");
    const toast = page.locator(".notifications-toasts .notification-toast").filter({ hasText: "no approval is waiting" });
    await toast.first().waitFor({ state: "visible", timeout: waitMs });
    const item = page.locator(".part.statusbar .statusbar-item", { hasText: "Claude Relay" });
    const statusBar = (await item.first().innerText()).trim();
    await runCommand(page, "Notifications: Clear All Notifications");
    return { statusBar };
  });
}

async function scenarioBash(page) {
  const b = config.bash;
  await step(page, "bash-prompt", async () => {
    await runCommand(page, RUN_IN_BACKGROUND);
    await answerInputBox(page, b.prompt);
  });
  let box;
  await step(page, "bash-approval", async () => {
    box = await approval(page, b.command);
    const labels = await buttonLabels(box);
    for (const want of ["Allow", "Always", "Deny"]) {
      if (!labels.includes(want)) {
        throw new Error(`the approval's buttons are ${JSON.stringify(labels)}: no "${want}"`);
      }
    }
    return { text: (await box.innerText()).replace(/\s+/g, " ").slice(0, 2000), buttons: labels };
  });
  await click(box, "Allow");
  await step(page, "bash-output", async () => {
    const { channel, text } = await waitOutput(page, [...b.output, /Run completed · \$0\.\d+/], "the run's output to show the tool output and its end");
    return { channel, text: text.slice(-3000) };
  });
  await step(page, "runs-view", async () => ({ row: await runsRow(page, [b.prompt.slice(0, 20), "completed", /\$0\.\d+/]) }));
}

async function scenarioWrite(page) {
  const w = config.write;
  await step(page, "write-prompt", async () => {
    await runCommand(page, RUN_IN_BACKGROUND);
    await answerInputBox(page, w.prompt);
  });
  let box;
  await step(page, "write-approval", async () => {
    box = await approval(page, w.path);
    return { text: (await box.innerText()).replace(/\s+/g, " ").slice(0, 2000), buttons: await buttonLabels(box) };
  });
  await click(box, "Deny");
  await step(page, "write-end", async () => {
    const { channel, text } = await waitOutput(page, [w.path, /Run (completed|failed)/], "the denied run's output to show its end");
    return { channel, text: text.slice(-3000) };
  });
}

async function scenarioTerminal(page) {
  const t = config.terminal;
  await step(page, "terminal-prompt", async () => {
    await runCommand(page, RUN_IN_TERMINAL);
    await answerInputBox(page, t.prompt);
  });
  await step(page, "terminal-output", async () => {
    const rows = page.locator(".part.panel .terminal-wrapper .xterm-rows").filter({ visible: true });
    const text = await until(`the terminal to show "${t.expect}"`, async () => {
      const texts = await rows.allInnerTexts();
      const joined = texts.join("\n").replace(/\u00a0/g, " ");
      return joined.includes(t.expect) ? { done: joined } : joined;
    });
    const tabs = await page.locator(".part.panel .terminal-tabs-entry, .part.panel .single-terminal-tab, .part.panel .tabs-list .monaco-list-row").allInnerTexts();
    return { tabs: tabs.map((s) => s.trim()).filter(Boolean), text: text.slice(-2000) };
  });
}

async function main() {
  const browser = await chromium.launch({
    executablePath: config.chromium,
    headless: true,
    args: [
      "--no-sandbox",
      "--headless",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage",
    ],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    const page = await context.newPage();
    // Each poll of `until` must come back quickly; long waits are its own.
    page.setDefaultTimeout(5_000);
    page.on("console", (m) => {
      if (m.type() === "error") {
        log(`console: ${m.text().slice(0, 500)}`);
      }
    });
    page.on("pageerror", (err) => log(`page error: ${err.message.slice(0, 500)}`));
    await step(page, "workbench", async () => {
      await page.goto(config.url, { waitUntil: "domcontentloaded", timeout: waitMs });
      await page.locator(".monaco-workbench").waitFor({ state: "visible", timeout: 2 * waitMs });
      // The explorer shows the folder once the workbench has connected to
      // the server; before that, the palette may not list extension commands.
      await page.locator(".explorer-folders-view, .explorer-viewlet").first().waitFor({ state: "attached", timeout: 2 * waitMs });
    });
    for (const s of config.steps) {
      switch (s) {
        case "idle":
          await scenarioIdle(page);
          break;
        case "bash":
          await scenarioBash(page);
          break;
        case "write":
          await scenarioWrite(page);
          break;
        case "terminal":
          await scenarioTerminal(page);
          break;
        default:
          throw new Error(`unknown step ${JSON.stringify(s)} in ${process.argv[2]}`);
      }
    }
  } finally {
    await browser.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    log(err.stack ?? String(err));
    process.exit(1);
  },
);
