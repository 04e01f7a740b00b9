// What a reconcile returns (`Outcome`), what a cleanup step returns (`Cleanup`), and how it fails.

/**
 * @param {number} ms
 * @returns {number}
 */
function millis(ms) {
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`a requeue delay must be a non-negative number of milliseconds, got ${ms}`);
  return Math.round(ms);
}

/**
 * The level the cluster should be held at: children, status and when to look again.
 * Build it fluently, as in the Rust SDK:
 * `Outcome.apply([cm, deploy, svc]).status({ ready: true }).requeueAfter(30_000)`.
 */
export class Outcome {
  /** @param {object[]} children */
  constructor(children = []) {
    /** @type {object[]} */
    this.children = children;
    /** @type {object | undefined} */
    this.desiredStatus = undefined;
    /** @type {'done' | 'now' | number} `'done'`, `'now'` or milliseconds. */
    this.requeue = 'done';
  }

  /**
   * Hold exactly these children; any other child the parent controls is deleted.
   * @param {Iterable<object>} children
   */
  static apply(children) {
    return new Outcome([...children]);
  }

  /**
   * Set the desired `status` of the parent.
   * @param {object} status
   */
  status(status) {
    this.desiredStatus = status;
    return this;
  }

  /**
   * Reconcile again after `ms` milliseconds even without a change.
   * @param {number} ms
   */
  requeueAfter(ms) {
    this.requeue = millis(ms);
    return this;
  }

  /** Reconcile again as soon as the host's hot-loop guard allows. */
  requeueNow() {
    this.requeue = 'now';
    return this;
  }
}

/** The result of one `finalize` step. */
export class Cleanup {
  /** @param {number | undefined} againAfterMs */
  constructor(againAfterMs) {
    /** @type {number | undefined} */
    this.againAfterMs = againAfterMs;
  }

  /** Cleanup is done; the host removes its finalizer. */
  static complete() {
    return new Cleanup(undefined);
  }

  /**
   * Not done yet; call `finalize` again after `ms` milliseconds.
   * @param {number} ms
   */
  static againAfter(ms) {
    return new Cleanup(millis(ms));
  }

  get isComplete() {
    return this.againAfterMs === undefined;
  }
}

/** A failed reconcile; throw `TransientError` or `PermanentError` rather than this. */
export class ReconcileError extends Error {
  /** @type {'transient' | 'permanent'} */
  get kind() {
    return 'transient';
  }
}

/** Retrying may help: the host retries with exponential backoff. */
export class TransientError extends ReconcileError {}

/**
 * Retrying will not help until the parent changes (an invalid spec, ...).
 * The host reports the message on the parent's status and waits for a change.
 */
export class PermanentError extends ReconcileError {
  /** @type {'transient' | 'permanent'} */
  get kind() {
    return 'permanent';
  }
}
