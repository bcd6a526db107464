// A recording stand-in for the `vscode` module, so node's test runner can
// run activate() and the commands (scripts/test.mjs aliases "vscode" to this
// file). It has what the extension touches at activation and in the
// commands the tests run; anything else is missing on purpose, so a test
// that reaches it fails and says which API it needs.

type Listener<T> = (e: T) => unknown;

export class Disposable {
  constructor(private readonly fn: () => void) {}

  static from(...items: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => {
      for (const d of items) {
        d.dispose();
      }
    });
  }

  dispose(): void {
    this.fn();
  }
}

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];

  readonly event = (listener: Listener<T>): Disposable => {
    this.listeners.push(listener);
    return new Disposable(() => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    });
  };

  fire(e: T): void {
    for (const l of [...this.listeners]) {
      l(e);
    }
  }

  dispose(): void {
    this.listeners = [];
  }
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class ThemeIcon {
  constructor(
    readonly id: string,
    readonly color?: ThemeColor,
  ) {}
}

/** Only what Open Dashboard needs: a parsed URL that prints itself. */
export class Uri {
  private constructor(private readonly value: string) {}

  static parse(value: string): Uri {
    return new Uri(value);
  }

  toString(): string {
    return this.value;
  }
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

/** What the extension did through this module, for the tests to read. */
export const recorded = {
  /** Settings the code read, as "section.key". */
  configReads: [] as string[],
  /** Lines written to each output channel, by its name. */
  output: new Map<string, string[]>(),
  /** Messages shown (information, warning, error). */
  messages: [] as string[],
  /** The same messages with their severity, options and buttons. */
  prompts: [] as Prompt[],
  statusBar: { text: "", tooltip: "" as unknown },
};

export interface Prompt {
  severity: "information" | "warning" | "error";
  message: string;
  options?: { modal?: boolean; detail?: string };
  buttons: string[];
}

/** The buttons the next messages are answered with, in order; none left means dismissed. */
export const picks: (string | undefined)[] = [];

/** The settings getConfiguration() answers with, as "section.key". */
export const settings = new Map<string, unknown>();

const commandsById = new Map<string, (...args: unknown[]) => unknown>();
const configListeners: Listener<{ affectsConfiguration(section: string): boolean }>[] = [];

/** Forgets everything recorded and registered (between tests). */
export function reset(): void {
  recorded.configReads = [];
  recorded.output.clear();
  recorded.messages = [];
  recorded.prompts = [];
  picks.length = 0;
  recorded.statusBar = { text: "", tooltip: "" };
  settings.clear();
  commandsById.clear();
  configListeners.length = 0;
}

/** Tells the extension that settings under section changed. */
export function changeSettings(section: string): void {
  for (const l of configListeners) {
    l({ affectsConfiguration: (s: string) => s === section || section.startsWith(`${s}.`) });
  }
}

const shown =
  (severity: Prompt["severity"]) =>
  (msg: string, ...rest: unknown[]): Promise<string | undefined> => {
    recorded.messages.push(msg);
    const first = rest[0];
    const options = typeof first === "object" && first !== null ? (rest.shift() as Prompt["options"]) : undefined;
    recorded.prompts.push({ severity, message: msg, ...(options !== undefined && { options }), buttons: rest as string[] });
    return Promise.resolve(picks.shift());
  };

export const window = {
  activeTextEditor: undefined,
  createOutputChannel(name: string) {
    const lines: string[] = [];
    recorded.output.set(name, lines);
    return { name, appendLine: (l: string) => lines.push(l), show: () => undefined, dispose: () => undefined };
  },
  createStatusBarItem() {
    const item = {
      name: "",
      command: "",
      backgroundColor: undefined as unknown,
      set text(t: string) {
        recorded.statusBar.text = t;
      },
      get text(): string {
        return recorded.statusBar.text;
      },
      set tooltip(t: unknown) {
        recorded.statusBar.tooltip = t;
      },
      show: () => undefined,
      dispose: () => undefined,
    };
    return item;
  },
  createTreeView() {
    return { badge: undefined as unknown, reveal: () => Promise.resolve(), dispose: () => undefined };
  },
  showInformationMessage: shown("information"),
  showWarningMessage: shown("warning"),
  showErrorMessage: shown("error"),
  showInputBox: () => Promise.resolve(undefined),
};

export const workspace = {
  workspaceFolders: undefined,
  getWorkspaceFolder: () => undefined,
  getConfiguration(section: string) {
    return {
      get<T>(key: string, def: T): T {
        const name = `${section}.${key}`;
        recorded.configReads.push(name);
        return settings.has(name) ? (settings.get(name) as T) : def;
      },
    };
  },
  onDidChangeConfiguration(listener: Listener<{ affectsConfiguration(section: string): boolean }>): Disposable {
    configListeners.push(listener);
    return new Disposable(() => configListeners.splice(configListeners.indexOf(listener), 1));
  },
  registerTextDocumentContentProvider: () => new Disposable(() => undefined),
};

export const commands = {
  registerCommand(id: string, fn: (...args: unknown[]) => unknown): Disposable {
    commandsById.set(id, fn);
    return new Disposable(() => commandsById.delete(id));
  },
  /** Runs a registered command, as the palette would. */
  async executeCommand(id: string, ...args: unknown[]): Promise<unknown> {
    const fn = commandsById.get(id);
    if (!fn) {
      throw new Error(`command ${id} is not registered`);
    }
    return fn(...args);
  },
};

export const env = {
  openExternal: () => Promise.resolve(true),
};
