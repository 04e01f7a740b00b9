import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { sha256, sha256Hex } from '../src/index.js';

const nodeHex = (/** @type {string | Uint8Array} */ s) => createHash('sha256').update(s).digest('hex');

test('sha256Hex matches node:crypto on padding edge cases and UTF-8', () => {
  for (const s of ['', 'abc', 'héllo wörld 日本 🚀', 'x'.repeat(55), 'x'.repeat(56), 'x'.repeat(63), 'x'.repeat(64), 'y'.repeat(1000)]) {
    assert.equal(sha256Hex(s), nodeHex(s), `input of length ${s.length}`);
  }
});

test('sha256 hashes bytes as given', () => {
  const bytes = Uint8Array.from({ length: 300 }, (_, i) => (i * 7) % 256);
  assert.equal(Buffer.from(sha256(bytes)).toString('hex'), nodeHex(bytes));
});

test('the known answer for "abc"', () => {
  assert.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
});
