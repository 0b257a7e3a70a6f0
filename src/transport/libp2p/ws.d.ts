// The part of `ws` that nodePolyfills.ts uses (the package ships no types; @types/ws is not installed).
declare module 'ws' {
  export const WebSocket: {
    new (url: string | URL, protocols?: string | string[]): globalThis.WebSocket & { on(event: 'error', listener: (error: Error) => void): unknown }
  }
}
