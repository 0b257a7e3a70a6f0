import { describe, expect, test } from 'vitest'
import { type InspectorProfile, nodeCategoryTotals } from '../../../bench/cpuProfile.ts'

/** A node of an inspector profile: id, function, URL and children. */
const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({ id, callFrame: { functionName, url }, children })

describe('nodeCategoryTotals: a headless profile by what the code is', () => {
  // root -> payment code -> secp256k1's JS -> its native; the profiler's stop and its native; a postMessage; idle.
  const profile: InspectorProfile = {
    nodes: [
      frame(1, '(root)', '', [2, 5, 7, 9, 10]),
      frame(2, 'signMessage', 'file:///app/src/protocol/messages/sign.ts', [3]),
      frame(3, 'ecdsaSign', 'file:///app/node_modules/secp256k1/lib/index.js', [4]),
      frame(4, '', ''),
      frame(5, 'post', 'node:inspector', [6]),
      frame(6, 'dispatch', ''),
      frame(7, 'deliver', 'file:///app/src/transport/delivery.ts', [8]),
      frame(8, 'postMessage', ''),
      frame(9, '(idle)', ''),
      frame(10, 'now', ''),
    ],
    samples: [2, 4, 4, 5, 6, 8, 9, 10],
    timeDeltas: [100, 200, 300, 400, 500, 600, 700, 800],
  }

  test("each sample's time goes to its frame's category: a native to its addon's, the profiler's stop apart from the node's work", () => {
    expect(Object.fromEntries(nodeCategoryTotals(profile))).toEqual({
      'protocol core (transition, packing, decoding)': 100,
      'secp256k1 sign + recover (native libsecp256k1)': 500,
      "the profiler's own stop (building the profile: not the node's work)": 900,
      'structured clone and postMessage (natives)': 600,
      'idle (waiting for fsync, timers, I/O)': 700,
      "Node's own code and natives (JSON, v8.serialize, timers, promises, fetch)": 800,
    })
  })
})
