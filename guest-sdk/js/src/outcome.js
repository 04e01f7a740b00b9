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

/**
 * The result of one `finalize` step: done, or not yet. A step may also act (contract 0.3.0):
 * `Cleanup.apply([deploy]).status({ phase: 'Draining' })` holds exactly these children (and
 * that status) while the finalizer is held, applied and pruned as a reconcile's are, and
 * `.finalized()` lets the parent go once they are written:
 * `observedZero ? Cleanup.apply([scaled]).finalized() : Cleanup.apply([scaled])`.
 */
export class Cleanup {
  /**
   * @param {boolean} complete
   * @param {'done' | 'now' | number} requeue
   */
  constructor(complete, requeue = 'done') {
    /** @type {boolean} Cleanup is done; the host removes its finalizer. */
    this.isComplete = complete;
    /** @type {'done' | 'now' | number} When to ask again while not done: `'done'` waits for a change. */
    this.requeue = requeue;
    /** @type {object[] | undefined} The children to hold while cleaning up; `undefined` leaves them as they are. */
    this.children = undefined;
    /** @type {object | undefined} */
    this.desiredStatus = undefined;
  }

  /** Cleanup is done; the host removes its finalizer. */
  static complete() {
    return new Cleanup(true);
  }

  /**
   * Not done yet; call `finalize` again after `ms` milliseconds.
   * @param {number} ms
   */
  static againAfter(ms) {
    return new Cleanup(false, millis(ms));
  }

  /**
   * Not done yet, and hold exactly these children meanwhile (any other child the parent
   * controls is deleted); `finalize` runs again at the next change of the parent or a child.
   * @param {Iterable<object>} children
   */
  static apply(children) {
    const cleanup = new Cleanup(false);
    cleanup.children = [...children];
    return cleanup;
  }

  /**
   * Set the desired `status` of the parent while it is cleaned up.
   * @param {object} status
   */
  status(status) {
    this.desiredStatus = status;
    return this;
  }

  /**
   * Done (or, with `false`, not yet): once this step's children and status are written, the
   * host removes its finalizer.
   * @param {boolean} [done]
   */
  finalized(done = true) {
    this.isComplete = done;
    return this;
  }

  /**
   * While not done, call `finalize` again after `ms` milliseconds even without a change.
   * @param {number} ms
   */
  requeueAfter(ms) {
    this.requeue = millis(ms);
    return this;
  }

  /** The delay of `againAfter`, or `undefined` when done or waiting for a change. */
  get againAfterMs() {
    return !this.isComplete && typeof this.requeue === 'number' ? this.requeue : undefined;
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
