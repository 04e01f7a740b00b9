import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Cleanup, Outcome, PermanentError, ReconcileError, TransientError } from '../src/index.js';

test('apply, status and requeueAfter build one outcome', () => {
  const o = Outcome.apply([{ kind: 'ConfigMap' }]).status({ ready: true }).requeueAfter(30_000);
  assert.deepEqual(o.children, [{ kind: 'ConfigMap' }]);
  assert.deepEqual(o.desiredStatus, { ready: true });
  assert.equal(o.requeue, 30_000);
});

test('the default outcome is done without a status', () => {
  const o = Outcome.apply([]);
  assert.equal(o.requeue, 'done');
  assert.equal(o.desiredStatus, undefined);
  assert.equal(Outcome.apply([]).requeueNow().requeue, 'now');
});

test('a negative or non-finite delay is refused', () => {
  assert.throws(() => Outcome.apply([]).requeueAfter(-1), RangeError);
  assert.throws(() => Cleanup.againAfter(Number.NaN), RangeError);
});

test('cleanup is complete or asks again, and carries nothing to apply', () => {
  assert.ok(Cleanup.complete().isComplete);
  const again = Cleanup.againAfter(5000);
  assert.ok(!again.isComplete);
  assert.equal(again.againAfterMs, 5000);
  assert.equal(again.children, undefined);
});

test('a cleanup that acts holds its children and status until it is finalized', () => {
  const step = Cleanup.apply([{ kind: 'ConfigMap' }]).status({ phase: 'Draining' });
  assert.deepEqual([step.children, step.desiredStatus, step.isComplete, step.requeue], [[{ kind: 'ConfigMap' }], { phase: 'Draining' }, false, 'done']);
  assert.ok(step.finalized().isComplete);
  assert.equal(Cleanup.apply([]).requeueAfter(1000).againAfterMs, 1000);
});

test('error kinds', () => {
  assert.equal(new PermanentError('x').kind, 'permanent');
  assert.equal(new TransientError('x').kind, 'transient');
  assert.ok(new PermanentError('x') instanceof ReconcileError);
  assert.equal(new TransientError('not ready').message, 'not ready');
});
