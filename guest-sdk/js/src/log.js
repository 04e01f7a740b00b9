// Logging through the host's `log` import, or the console when run natively.
//
// Inside a component the host turns each call into a `tracing` event in the
// span of the running reconcile. In native tests the calls go to the
// console, or to a sink the test installs with `setSink` to assert on them.

/** @typedef {'trace' | 'debug' | 'info' | 'warn' | 'error'} Level */

export const LEVELS = /** @type {const} */ (['trace', 'debug', 'info', 'warn', 'error']);

/** @type {(level: Level, message: string) => void} */
const consoleSink = (level, message) => {
  const write = level === 'error' ? console.error : level === 'warn' ? console.warn : console.log;
  write(`[${level}] ${message}`);
};

let sink = consoleSink;

/**
 * Route log calls to `fn(level, message)`; the component glue installs the host import.
 * `undefined` restores the console.
 * @param {((level: Level, message: string) => void) | undefined} fn
 */
export function setSink(fn) {
  sink = fn ?? consoleSink;
}

/**
 * Log `message` at `level`.
 * @param {Level} level
 * @param {string} message
 */
export function log(level, message) {
  if (!LEVELS.includes(level)) throw new RangeError(`unknown log level ${level}; expected one of ${LEVELS.join(', ')}`);
  sink(level, String(message));
}

/** @param {string} message */
export const trace = (message) => log('trace', message);
/** @param {string} message */
export const debug = (message) => log('debug', message);
/** @param {string} message */
export const info = (message) => log('info', message);
/** @param {string} message */
export const warn = (message) => log('warn', message);
/** @param {string} message */
export const error = (message) => log('error', message);
