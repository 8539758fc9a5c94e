/**
 * QR codes from the camera, for the door's scanner: the browser's own
 * `BarcodeDetector` where it has one that reads QR codes (Android, macOS),
 * else the `barcode-detector` ponyfill: ZXing in WebAssembly, whose `.wasm`
 * this app serves itself (Vite emits it as an asset, the service worker
 * precaches it), so scanning works offline and no CDN is asked.
 */
import wasmURL from "zxing-wasm/reader/zxing_reader.wasm?url";

export interface QRReader {
  /** "native" or "zxing-wasm": which reader is in use, for the page to say. */
  readonly kind: string;
  detect(source: HTMLVideoElement): Promise<string[]>;
}

interface NativeDetector {
  detect(source: HTMLVideoElement): Promise<{ rawValue: string }[]>;
}
interface NativeDetectorClass {
  new (options: { formats: string[] }): NativeDetector;
  getSupportedFormats(): Promise<string[]>;
}

/** The best QR reader this browser has. */
export async function qrReader(): Promise<QRReader> {
  const native = (globalThis as { BarcodeDetector?: NativeDetectorClass }).BarcodeDetector;
  const formats: string[] = native ? await native.getSupportedFormats().catch(() => []) : [];
  if (native && formats.includes("qr_code")) {
    const d = new native({ formats: ["qr_code"] });
    return { kind: "native", detect: async (v) => (await d.detect(v)).map((b) => b.rawValue) };
  }
  const { BarcodeDetector, prepareZXingModule } = await import("barcode-detector/ponyfill");
  // Loaded now, from this app: not from the CDN the ponyfill defaults to.
  await prepareZXingModule({
    overrides: { locateFile: (path: string, prefix: string) => (path.endsWith(".wasm") ? new URL(wasmURL, location.href).href : prefix + path) },
    fireImmediately: true,
  });
  const d = new BarcodeDetector({ formats: ["qr_code"] });
  return { kind: "zxing-wasm", detect: async (v) => (await d.detect(v)).map((b) => b.rawValue) };
}

/**
 * Reads codes from the back camera into `video`, calling `onCode` for each
 * code read, a few times a second, until `signal` aborts. The same code in
 * view is reported once: again only after it has been out of view for
 * `quietMs` (a ticket held up for a while is one scan).
 */
export async function scanCamera(video: HTMLVideoElement, reader: QRReader, onCode: (code: string) => void, signal: AbortSignal, quietMs = 3000): Promise<void> {
  const stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: { ideal: "environment" }, width: { ideal: 1280 }, height: { ideal: 720 } }, audio: false });
  signal.addEventListener("abort", () => {
    for (const t of stream.getTracks()) t.stop();
    video.srcObject = null;
  });
  video.srcObject = stream;
  video.muted = true;
  video.playsInline = true;
  await video.play();
  const lastSeen = new Map<string, number>();
  while (!signal.aborted) {
    if (video.readyState >= HTMLMediaElement.HAVE_CURRENT_DATA) {
      let codes: string[] = [];
      try {
        codes = await reader.detect(video);
      } catch {
        // a frame it could not read: the next one
      }
      const now = performance.now();
      for (const code of codes) {
        const seen = lastSeen.get(code);
        lastSeen.set(code, now);
        if (seen === undefined || now - seen > quietMs) onCode(code);
      }
    }
    await new Promise((r) => setTimeout(r, 120));
  }
}
