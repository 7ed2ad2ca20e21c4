/*
 * Building the page from data, as text only: elements are created one by one, and every
 * string a model or a server wrote goes in through textContent, never as markup or a URL.
 */

import { isExact, stringify } from './exact.js';

const FORBIDDEN_ATTRIBUTES = /^(on|href$|src$|srcdoc$|style$|action$|formaction$|xlink:)/i;

export function el(tag, options, children) {
  var node = document.createElement(tag);
  options = options || {};
  if (options.className) node.className = options.className;
  if (options.text !== undefined) node.textContent = options.text;
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
