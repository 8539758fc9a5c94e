/**
 * A video of a QR code for Chromium's fake camera
 * (`--use-file-for-fake-video-capture=FILE.y4m`), written here without
 * ffmpeg: Y4M is a text header, then per frame `FRAME\n` and the Y, U and V
 * planes (4:2:0, so U and V at half width and height). The code's modules
 * (from `qrcode`, as the tickets page draws them) go into the luma plane,
 * black on white with a quiet zone of four modules; U = V = 128 (grey).
 * Chromium plays the file in a loop.
 */
import { writeFileSync } from "node:fs";
import QRCode from "qrcode";

export function writeQRVideo(path: string, text: string, opts: { width?: number; height?: number; frames?: number } = {}): void {
  const w = opts.width ?? 640;
  const h = opts.height ?? 480;
  const frames = opts.frames ?? 2;
  const qr = QRCode.create(text, { errorCorrectionLevel: "M" });
  const n = qr.modules.size;
  const quiet = 4;
  const scale = Math.floor(Math.min(w, h) / (n + 2 * quiet));
  if (scale < 2) throw new Error(`a QR code of ${String(n)} modules does not fit ${String(w)}x${String(h)}`);
  const side = (n + 2 * quiet) * scale;
  const x0 = Math.floor((w - side) / 2);
  const y0 = Math.floor((h - side) / 2);
  const luma = Buffer.alloc(w * h, 128); // grey around the white card
  for (let y = y0; y < y0 + side; y++) luma.fill(235, y * w + x0, y * w + x0 + side);
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < n; c++) {
      if (!qr.modules.get(r, c)) continue;
      for (let dy = 0; dy < scale; dy++) {
        const row = (y0 + (quiet + r) * scale + dy) * w + x0 + (quiet + c) * scale;
        luma.fill(16, row, row + scale);
      }
    }
  }
  const chroma = Buffer.alloc((w / 2) * (h / 2), 128);
  const frame = Buffer.concat([Buffer.from("FRAME\n"), luma, chroma, chroma]);
  const header = Buffer.from(`YUV4MPEG2 W${String(w)} H${String(h)} F10:1 Ip A1:1 C420jpeg\n`);
  writeFileSync(path, Buffer.concat([header, ...Array<Buffer>(frames).fill(frame)]));
}
