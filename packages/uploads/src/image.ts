import type { Metadata, Sharp, SharpOptions } from 'sharp';

type SharpFactory = (input?: Uint8Array, options?: SharpOptions) => Sharp;

let loading: Promise<SharpFactory> | undefined;

/** libvips is loaded on the first image, not when the package is imported. */
function loadSharp(): Promise<SharpFactory> {
  loading ??= import('sharp').then((module) => module.default as SharpFactory);
  return loading;
}

/** Raster formats the image path accepts; SVG and PDF are documents, not pictures, here. */
const RASTER = new Set(['jpeg', 'png', 'webp', 'gif', 'avif', 'heif', 'tiff', 'jp2k', 'jxl']);
/** Formats a model reads as they are; anything else is re-encoded. */
const MODEL_FORMATS = new Set(['jpeg', 'png', 'webp', 'gif']);
/** Below this longest side the budget is given up on and the last attempt returned. */
const MIN_EDGE = 32;

/** What {@link sniffImage} found in a byte buffer. */
export interface ImageInfo {
  format: string;
  /** Display size, with EXIF orientation applied. */
  width: number;
  height: number;
  hasAlpha: boolean;
  /** Whether the stored pixels need rotating to display upright. */
  rotated: boolean;
}

/** A picture ready for a model. */
export interface ModelImage {
  bytes: Buffer;
  mimeType: string;
  width: number;
  height: number;
}

/** Limits for {@link toModelImage}. */
export interface ImageLimits {
  maxEdge: number;
  maxBytes: number;
  maxPixels: number;
}

/** Reads the header of `bytes` with sharp; `undefined` when it is not a raster image sharp can decode. */
export async function sniffImage(bytes: Uint8Array, maxPixels: number): Promise<ImageInfo | undefined> {
  let meta: Metadata;
  try {
    // Without sharp's native library (an unsupported platform), images come back as bytes.
    const sharp = await loadSharp();
    meta = await sharp(bytes, { limitInputPixels: maxPixels }).metadata();
  } catch {
    return undefined;
  }
  if (!RASTER.has(meta.format) || !(meta.width > 0) || !(meta.height > 0)) return undefined;
  // Checked here as well: metadata reads only the header, and a pixel bomb is refused before decoding.
  if (meta.width * meta.height > maxPixels) return undefined;
  return {
    format: meta.format,
    width: meta.autoOrient?.width ?? meta.width,
    height: meta.autoOrient?.height ?? meta.height,
    hasAlpha: meta.hasAlpha,
    rotated: meta.orientation !== undefined && meta.orientation !== 1,
  };
}

function mimeOf(format: string): string {
  return format === 'jpeg' ? 'image/jpeg' : `image/${format}`;
}

/**
 * Fits an image to a model-friendly size: the longest side at most `maxEdge` and the encoding at
 * most `maxBytes` when it can be; an image already within both, in a format models read, is
 * returned untouched.
 */
export async function toModelImage(
  bytes: Uint8Array,
  info: ImageInfo,
  limits: ImageLimits,
): Promise<ModelImage> {
  const longest = Math.max(info.width, info.height);
  if (
    longest <= limits.maxEdge &&
    bytes.length <= limits.maxBytes &&
    MODEL_FORMATS.has(info.format) &&
    !info.rotated
  ) {
    return {
      bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length),
      mimeType: mimeOf(info.format),
      width: info.width,
      height: info.height,
    };
  }
  // Lossless first for pictures with transparency (screenshots, diagrams), then lossy.
  const sharp = await loadSharp();
  const encoders: ((image: Sharp) => Sharp)[] = info.hasAlpha
    ? [(i) => i.png({ compressionLevel: 6 }), (i) => i.webp({ quality: 80 }), (i) => i.webp({ quality: 60 })]
    : [(i) => i.jpeg({ quality: 85 }), (i) => i.jpeg({ quality: 70 }), (i) => i.jpeg({ quality: 55 })];
  let edge = Math.min(longest, limits.maxEdge);
  for (;;) {
    // Decode and resize once per size; each encoder then works from the same pixels.
    const { data, info: raw } = await sharp(bytes, { limitInputPixels: limits.maxPixels, autoOrient: true })
      .resize({ width: edge, height: edge, fit: 'inside', withoutEnlargement: true })
      .raw()
      .toBuffer({ resolveWithObject: true });
    let smallest: ModelImage | undefined;
    for (const encode of encoders) {
      const pixels = sharp(data, { raw: { width: raw.width, height: raw.height, channels: raw.channels } });
      const { data: out, info: outInfo } = await encode(pixels).toBuffer({ resolveWithObject: true });
      const candidate = {
        bytes: out,
        mimeType: mimeOf(outInfo.format),
        width: outInfo.width,
        height: outInfo.height,
      };
      if (out.length <= limits.maxBytes) return candidate;
      if (smallest === undefined || out.length < smallest.bytes.length) smallest = candidate;
    }
    // Every encoder ran, so there is a smallest attempt.
    if (edge <= MIN_EDGE) return smallest!;
    // Encoded size grows with the pixel count: shrink by the square root of how far over we are.
    const scale = Math.sqrt(limits.maxBytes / smallest!.bytes.length) * 0.9;
    edge = Math.max(MIN_EDGE, Math.min(Math.floor(edge * scale), Math.floor(edge * 0.9)));
  }
}
