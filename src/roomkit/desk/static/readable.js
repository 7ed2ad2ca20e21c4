/*
 * A tool's arguments as a person reads them: a table of labelled values built from the
 * tool's JSON Schema, with the raw JSON one click away.
 *
 * A field's label is its schema's `title` (else its name, in words), with its `description`
 * under it; numbers show their unit (`x-unit` or `unit`), booleans read Yes or No, an enum
 * value shows its label (a `oneOf` of `{const, title}`, or `x-enumNames`), dates read as
 * dates, lists as lists and nested objects as tables of their own; an integer past 2^53
 * shows every digit (exact.js). Given the arguments as
 * they were before an edit, the values that changed are marked, with what they were.
 */

import { el, isObject, text } from './dom.js';
import { exactText, isExact, stringify } from './exact.js';

var DEEPEST = 4;

// "arrival_date" and "arrivalDate" read "Arrival date".
export function words(name) {
  var spaced = String(name).replace(/[_-]+/g, ' ').replace(/([a-z0-9])([A-Z])/g, '$1 $2').trim();
  if (!spaced) return String(name);
  return spaced.charAt(0).toUpperCase() + spaced.slice(1).toLowerCase();
}

function propertySchema(schema, name) {
  if (!isObject(schema) || !isObject(schema.properties)) return {};
  var found = schema.properties[name];
  return isObject(found) ? found : {};
}

function enumLabel(schema, value) {
  var choices = Array.isArray(schema.oneOf) ? schema.oneOf : Array.isArray(schema.anyOf) ? schema.anyOf : [];
  for (var i = 0; i < choices.length; i++) {
    if (isObject(choices[i]) && same(choices[i].const, value) && typeof choices[i].title === 'string') {
      return choices[i].title;
    }
  }
  var names = Array.isArray(schema['x-enumNames']) ? schema['x-enumNames'] : null;
  if (names && Array.isArray(schema.enum)) {
    var at = schema.enum.findIndex(function (option) { return same(option, value); });
    if (at >= 0 && typeof names[at] === 'string') return names[at];
  }
  return null;
}

function unitOf(schema) {
  var unit = schema['x-unit'] !== undefined ? schema['x-unit'] : schema.unit;
  return typeof unit === 'string' && unit ? unit : null;
}

function dateText(value, format) {
  var date = new Date(value);
  if (isNaN(date.getTime())) return value;
  return format === 'date' ? date.toLocaleDateString(undefined, { timeZone: 'UTC' }) : date.toLocaleString();
}

// A scalar in words: the enum's label, the number with its unit, Yes or No, a date.
export function scalarText(value, schema) {
  schema = isObject(schema) ? schema : {};
  var label = enumLabel(schema, value);
  if (label !== null) return label;
  if (value === null || value === undefined) return '—';
  if (typeof value === 'boolean') return value ? 'Yes' : 'No';
  if (typeof value === 'number' || isExact(value)) {
    var unit = unitOf(schema);
    return (isExact(value) ? exactText(value) : value.toLocaleString()) + (unit ? ' ' + unit : '');
  }
  if (typeof value === 'string' && (schema.format === 'date' || schema.format === 'date-time')) {
    return dateText(value, schema.format);
  }
  return text(value);
}

// JSON with the keys of every object in order: the history keeps arguments that way.
function canonical(value) {
  if (Array.isArray(value)) return '[' + value.map(canonical).join(',') + ']';
  if (isObject(value)) {
    return '{' + Object.keys(value).sort().map(function (key) {
      return JSON.stringify(key) + ':' + canonical(value[key]);
    }).join(',') + '}';
  }
  return stringify(value === undefined ? null : value);
}

// Whether two JSON values are the same, whatever the order of their keys.
export function same(a, b) {
  return canonical(a) === canonical(b);
}

function valueNode(value, schema, depth) {
  schema = isObject(schema) ? schema : {};
  if (depth > DEEPEST) return el('code', { text: text(value) });
  if (isObject(value)) return table(value, schema, null, depth + 1);
  if (Array.isArray(value)) {
    if (!value.length) return el('span', { className: 'quiet', text: 'none' });
    var items = isObject(schema.items) ? schema.items : {};
    if (value.every(function (item) { return !isObject(item) && !Array.isArray(item); })) {
      return el('span', { text: value.map(function (item) { return scalarText(item, items); }).join(', ') });
    }
    return el('ol', { className: 'argument-items' }, value.map(function (item) {
      return el('li', {}, [valueNode(item, items, depth + 1)]);
    }));
  }
  return el('span', { text: scalarText(value, schema) });
}

function names(args, schema) {
  var ordered = isObject(schema) && isObject(schema.properties) ? Object.keys(schema.properties) : [];
  var present = ordered.filter(function (name) { return Object.prototype.hasOwnProperty.call(args, name); });
  return present.concat(Object.keys(args).filter(function (name) { return present.indexOf(name) < 0; }));
}

function table(args, schema, before, depth) {
  var body = el('tbody');
  names(args, schema).forEach(function (name) {
    var field = propertySchema(schema, name);
    var label = el('th', { attrs: { scope: 'row' }, text: typeof field.title === 'string' && field.title ? field.title : words(name) });
    if (typeof field.description === 'string' && field.description) {
      label.appendChild(el('small', { className: 'field-description', text: field.description }));
    }
    var cell = el('td', {}, [valueNode(args[name], field, depth)]);
    var row = el('tr', { attrs: { 'data-field': name } }, [label, cell]);
    if (isObject(before) && !same(before[name], args[name])) {
      row.className = 'changed';
      var was = Object.prototype.hasOwnProperty.call(before, name) ? before[name] : null;
      cell.appendChild(el('small', { className: 'was', text: 'was ' + (isObject(was) || Array.isArray(was) ? text(was) : scalarText(was, field)) }));
    }
    body.appendChild(row);
  });
  return el('table', { className: 'argument-table' }, [body]);
}

// The arguments as a labelled table, and their raw JSON in a closed <details> beneath.
export function argumentsView(args, schema, before) {
  var raw = el('details', { className: 'raw-arguments' }, [
    el('summary', { text: 'Show as JSON' }),
    el('pre', { className: 'arguments', text: stringify(args, 2) })
  ]);
  var shown = Object.keys(args).length
    ? table(args, schema, before, 0)
    : el('p', { className: 'quiet', text: 'No arguments.' });
  return el('div', { className: 'argument-view' }, [shown, raw]);
}

// One line of words for arguments (a settled edit, a history entry): "Amount: 4,999 EUR; ...".
export function argumentsLine(args, schema) {
  if (!isObject(args)) return text(args);
  return names(args, schema).map(function (name) {
    var field = propertySchema(schema, name);
    var label = typeof field.title === 'string' && field.title ? field.title : words(name);
    return label + ': ' + valueWords(args[name], field);
  }).join('; ');
}

function valueWords(value, schema) {
  if (isObject(value)) return '(' + argumentsLine(value, schema) + ')';
  if (Array.isArray(value)) {
    var items = isObject(schema.items) ? schema.items : {};
    return value.length ? value.map(function (item) { return valueWords(item, items); }).join(', ') : 'none';
  }
  return scalarText(value, schema);
}
