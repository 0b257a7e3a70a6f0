/**
 * The node's log in the browser (docs/decisions/0041): the worker formats its records (src/log/logger.ts) and hands
 * each line to the page, which writes it to its console at the record's level; the page's own side (the leader's
 * watchdog) writes the same way. What the page, the node's worker and their tests agree on.
 */
import type { LogThreshold, LogWrite } from '../src/log/logger.ts'

/**
 * Unless `startNode({ logLevel })` says otherwise, only what needs attention: a library's info lines (each
 * payment, each channel) would fill the console of the dApp and of every one of its users.
 */
export const DEFAULT_LOG_LEVEL: LogThreshold = 'warn'

/** A line to the console method of its level, marked as the node's among the dApp's own. */
export const consoleLine: LogWrite = (line, level) => console[level](`[sluice] ${line}`)
