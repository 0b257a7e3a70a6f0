import { loadNativeSecp256k1 } from '../../src/cli/nativeSecp256k1.ts'

/**
 * The fastest curve engine here (native where its prebuilt binary loads, else WASM, else JS), for Node tests that
 * sign or recover a lot and would be slow on the pure-JS one; all engines give the same bytes. Not for the browser.
 */
export const nativeCurve = await loadNativeSecp256k1()
