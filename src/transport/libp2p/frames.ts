/**
 * Frames of the message protocol: each is one length-prefixed chunk holding a JSON array of wire lines. A batch
 * is split into several frames so that no frame grows past `maxFrameBytes` (a line longer than that goes alone).
 */
const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

/** The largest frame a receiver accepts; a sender keeps its frames well below it. */
export const maxFrameBytes = 4 * 1024 * 1024
/** Where a sender starts a new frame. */
export const targetFrameBytes = 256 * 1024

export function encodeFrames(lines: readonly string[], target = targetFrameBytes): Uint8Array[] {
  const frames: Uint8Array[] = []
  let batch: string[] = []
  let size = 2
  for (const line of lines) {
    // JSON.stringify escapes; the UTF-8 length of the escaped line is close to this estimate, and the frame
    // limit has room to spare.
    const cost = encoder.encode(line).length + 3
    if (batch.length > 0 && size + cost > target) {
      frames.push(encoder.encode(JSON.stringify(batch)))
      batch = []
      size = 2
    }
    batch.push(line)
    size += cost
  }
  if (batch.length > 0) frames.push(encoder.encode(JSON.stringify(batch)))
  return frames
}

/** The lines of a frame, or undefined if it is not a JSON array of strings (a peer that speaks something else). */
export function decodeFrame(frame: Uint8Array): string[] | undefined {
  try {
    const value: unknown = JSON.parse(decoder.decode(frame))
    return Array.isArray(value) && value.every((l) => typeof l === 'string') ? (value as string[]) : undefined
  } catch {
    return undefined
  }
}
