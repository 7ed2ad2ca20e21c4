/*
 * Building the page from data, as text only: elements are created one by one, and every
 * string a model or a server wrote goes in through textContent, never as markup or a URL,
 * and with nothing in it that changes how the rest reads (see `shownText`; a field the person
 * edits shows the same characters marked, see `markedText`).
 */

import { isExact, stringify } from './exact.js';

const FORBIDDEN_ATTRIBUTES = /^(on|href$|src$|srcdoc$|style$|action$|formaction$|xlink:)/i;

// What may change how the rest of a text reads: control characters (a line break and a tab
// aside), and the bidi marks, embeddings, overrides and isolates. The same class as
// roomkit.notify.wording.STEERING, which every notification surface uses.
const STEERING = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

// `value` as the page shows it: what steers its reading is a replacement character
// ("Amount: <RLO>0001" would read "Amount: 1000", and be approved as that). Only what is
// shown changes: the request, its arguments and what the page sends keep every character.
export function shownText(value) {
  return value === null || value === undefined ? '' : String(value).replace(STEERING, '\uFFFD');
}

// Whether the text `value` holds anything that steers how it reads.
export function steers(value) {
  return typeof value === 'string' && value.search(STEERING) >= 0;
}

// `value` as a field the person edits shows it: each character that steers its reading
// written out as its code point, `⟨U+202E⟩`, which says which one it is, where a replacement
// character would not. The marks are text: typed back, they are sent as the text they are.
export function markedText(value) {
  return String(value).replace(STEERING, function (ch) {
    return '\u27e8U+' + ch.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0') + '\u27e9';
  });
}

// JSON text with each character that steers its reading (JSON.stringify writes the bidi
// marks and C1 controls as they are) written as a `\u` escape: the same JSON, which reads back
// to the same value, shown as it is.
export function escapedJson(json) {
  return String(json).replace(STEERING, function (ch) {
    return '\\u' + ch.charCodeAt(0).toString(16).padStart(4, '0');
  });
}

export function el(tag, options, children) {
  var node = document.createElement(tag);
  options = options || {};
  if (options.className) node.className = options.className;
  if (options.text !== undefined) node.textContent = shownText(options.text);
  var attrs = options.attrs || {};
  Object.keys(attrs).forEach(function (name) {
    if (FORBIDDEN_ATTRIBUTES.test(name)) throw new Error('refusing attribute ' + name);
    node.setAttribute(name, String(attrs[name]));
  });
  (children || []).forEach(function (child) {
    if (child) node.appendChild(child);
  });
  return node;
}

export function text(value) {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  try {
    return stringify(value);
  } catch (err) {
    return String(value);
  }
}

// An object of JSON: not a list, and not an integer kept as its digits (exact.js).
export function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && !isExact(value);
}

export function when(iso) {
  var date = new Date(iso);
  return isNaN(date.getTime()) ? '' : date.toLocaleTimeString();
}

export function show(node, visible) {
  node.hidden = !visible;
}
