// Answers that may be Promises: a hook may be `async`; its Promise is awaited, a plain answer stays synchronous.
//
// componentize-js runs the component's event loop until a Promise returned by
// an export settles, so the glue may return either; natively, `node --test`
// sees a plain value from a synchronous hook and a Promise from an `async` one.

/**
 * Whether `value` is a Promise or another thenable.
 * @param {unknown} value
 * @returns {value is PromiseLike<unknown>}
 */
export function isThenable(value) {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (/** @type {any} */ (value).then) === 'function';
}

/**
 * `then(value)` once `value` is known: at once for a plain value, after it
 * resolves for a thenable (the result is then a Promise). With `failed`, an
 * error thrown by `then` or a rejection is answered by `failed(error)` instead.
 * @template T, R
 * @param {T | PromiseLike<T>} value
 * @param {(value: T) => R} then
 * @param {(error: unknown) => R} [failed]
 * @returns {R | Promise<R>}
 */
export function awaited(value, then, failed) {
  if (isThenable(value)) {
    const next = Promise.resolve(value).then(then);
    return failed ? next.catch(failed) : next;
  }
  if (!failed) return then(/** @type {T} */ (value));
  try {
    return then(/** @type {T} */ (value));
  } catch (e) {
    return failed(e);
  }
}
