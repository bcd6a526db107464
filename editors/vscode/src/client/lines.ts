// Splits a byte stream into lines. The helper's stdout carries one JSON object per line, and a
// stream payload can be megabytes long, so partial lines are kept as a list of pieces (joined once
// their newline arrives) rather than re-concatenated on every chunk.
import { StringDecoder } from "node:string_decoder";

export class LineSplitter {
  private readonly decoder = new StringDecoder("utf8");
  private pieces: string[] = [];

  /** Returns the lines completed by chunk, without their line endings. */
  push(chunk: Buffer | string): string[] {
    const text = typeof chunk === "string" ? chunk : this.decoder.write(chunk);
    const lines: string[] = [];
    let start = 0;
    for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", start)) {
      this.pieces.push(text.slice(start, nl));
      lines.push(stripCR(this.pieces.join("")));
      this.pieces = [];
      start = nl + 1;
    }
    if (start < text.length) {
      this.pieces.push(text.slice(start));
    }
    return lines;
  }

  /** Returns what is left after the stream ended: a last line without a newline, if any. */
  end(): string[] {
    const rest = this.pieces.join("") + this.decoder.end();
    this.pieces = [];
    return rest === "" ? [] : [stripCR(rest)];
  }
}

function stripCR(line: string): string {
  return line.endsWith("\r") ? line.slice(0, -1) : line;
}
