/*
 * The card of an approval: a tool the agent wants to run, held until a person decides.
 *
 * It shows the tool, its description and the arguments as the model wrote them (a table
 * labelled from the tool's JSON Schema, the raw JSON one click away; on an edited request the
 * changed values marked), with Approve, Edit (a form built from the tool's JSON Schema, or a
 * JSON editor; a value holding a character that steers how it reads shows it marked, with a
 * warning, and goes back as it came unless the person changes it), Reject (with a reason) and
 * Answer instead (the person's text becomes the tool's result). Someone who may see the
 * approval but may not decide it sees who may, and no buttons; a delegate, a role's member or
 * whoever is on call (the view's `deciding`) decides like an approver.
 * A quorum approval shows how far it has come ("1 of 2 approvals — waiting for bob, carol");
 * each listed approver votes (no Answer instead), and the card is drawn again at every vote.
 * Under it, the request's history: who did what, when, through which surface (and, for an
 * outcome handed to the framework that asked, whether it refused it, and why). The history
 * also brings the tool's description and the marks on edited values, drawn above the
 * buttons; the buttons show once it is read, so that nothing moves under a press.
 *
 * Every decision names the digest of the arguments the card shows: when an edit has
 * changed them since, the desk refuses it (409) and the page draws the card again with the
 * arguments as they are.
 */

import { buildForm, check, drawable } from './schemaform.js';
import { el, escapedJson, isObject, shownText, steers, text, when } from './dom.js';
import { parseJson, stringify } from './exact.js';
import { argumentsLine, argumentsView, same } from './readable.js';

var DIGEST_SHOWN = 12;
var JSON_WARNING = 'These arguments hold invisible direction or control characters, written ' +
  'here as \\u escapes (such as \\u202e), which JSON reads back as those characters.';

export function renderApproval(ctx, args, page) {
  var view = ctx.view;
  var shown = typeof view.arguments_digest === 'string' ? view.arguments_digest : null;
  // A decision on the arguments this card shows, and no others.
  ctx.decide = function (body) {
    if (shown) body.digest = shown;
    ctx.send('answer', body);
  };
  var schema = isObject(view.answer_schema) ? view.answer_schema : {};
  var title = el('p', { className: 'question-text' }, [
    el('span', { text: 'The agent wants to run ' }),
    el('code', { className: 'tool-name', text: text(view.tool_name) })
  ]);
  var description = el('p', { className: 'tool-description' });
  description.hidden = true;
  ctx.card.appendChild(title);
  ctx.card.appendChild(description);
  var shownArguments = argumentsView(args, schema, null);
  ctx.card.appendChild(shownArguments);
  var quorum = typeof view.quorum === 'number' ? view.quorum : null;
  if (quorum !== null) ctx.card.appendChild(progress(view, quorum));
  var drawn = ctx.card.childNodes.length;
  if (mayDecide(view, page.me)) {
    renderDecisions(ctx, args, schema, quorum !== null, page.link === true);
  } else if (quorum !== null) {
    ctx.card.appendChild(el('p', { className: 'quiet waiting', text: 'Your vote is in.' }));
  } else {
    // Those deciding now when the directory routes it (a delegate, a role's members).
    var deciding = Array.isArray(view.deciding) && view.deciding.length ? view.deciding : view.approvers;
    var names = Array.isArray(deciding) ? deciding.map(text).join(', ') : '';
    ctx.card.appendChild(el('p', { className: 'quiet waiting', text: 'Waiting for a decision by ' + names + '.' }));
  }
  var history = el('ol', { className: 'history-list' });
  ctx.card.appendChild(el('details', { className: 'history' }, [el('summary', { text: 'History' }), history]));
  // The history brings the description and the marks on edited values, both above the
  // buttons: the buttons (and the history) wait for it, so that nothing moves under a press
  // (one whose release lands beside the button it began on clicks nothing).
  var late = Array.prototype.slice.call(ctx.card.childNodes, drawn);
  late.forEach(function (node) { node.hidden = true; });
  var reveal = function () {
    late.forEach(function (node) { node.hidden = false; });
  };
  page.history(view.id).then(function (entries) {
    reveal();
    if (!entries) return;
    drawHistory(history, entries, schema);
    // Edited since it was asked: the values that changed are marked, with what they were.
    var before = previousArguments(entries, args);
    if (before) shownArguments.replaceWith(argumentsView(args, schema, before));
    var created = entries.filter(function (entry) { return isObject(entry) && entry.type === 'created'; })[0];
    if (created && typeof created.description === 'string' && created.description) {
      description.textContent = shownText(created.description);
      description.hidden = false;
    }
  }, reveal);
}

// The arguments as they were before the last change to them, or null when never changed.
function previousArguments(entries, args) {
  var versions = entries.filter(function (entry) { return isObject(entry) && isObject(entry.arguments); });
  for (var i = versions.length - 1; i >= 0; i--) {
    if (!same(versions[i].arguments, args)) return versions[i].arguments;
  }
  return null;
}

// "1 of 2 approvals — waiting for bob, carol": how far a quorum approval has come.
function progress(view, quorum) {
  var approved = Array.isArray(view.approved_by) ? view.approved_by.length : 0;
  var waiting = Array.isArray(view.approvers) ? view.approvers.map(text).join(', ') : '';
  var line = approved + ' of ' + quorum + ' approval' + (quorum === 1 ? '' : 's');
  if (waiting) line += ' — waiting for ' + waiting;
  return el('p', { className: 'quorum-progress', attrs: { role: 'status' }, text: line });
}

// An approver, or someone the directory has decide now (a delegate, a role's member,
// whoever is on call): the desk takes their decision on behalf of the approver of record.
function mayDecide(view, me) {
  var approvers = Array.isArray(view.approvers) ? view.approvers : [];
  var deciding = Array.isArray(view.deciding) ? view.deciding : [];
  if (!approvers.length) return true;
  return isObject(me) && (approvers.indexOf(me.actor_id) >= 0 || deciding.indexOf(me.actor_id) >= 0);
}

function renderDecisions(ctx, args, schema, voting, byLink) {
  var panels = el('div', { className: 'decision-panels' });
  var buttons = el('div', { className: 'row decision-buttons' });
  // A request raised by a framework that carries fewer decisions lists the ones it takes.
  var offered = isObject(schema) && Array.isArray(schema['x-roomkit-decisions']) ? schema['x-roomkit-decisions'] : null;
  var takes = function (kind) { return !offered || offered.indexOf(kind) >= 0; };
  var approve = el('button', { className: 'primary', text: 'Approve', attrs: { type: 'button' } });
  var edit = editPanel(ctx, args, schema);
  edit.hidden = true;
  var again = el('input', { attrs: { type: 'checkbox' } });
  var againLabel = el('label', { className: 'grant-again' }, [
    again, el('span', { text: ' and the same again for an hour' })
  ]);
  approve.addEventListener('click', function () {
    // Approve runs the arguments as shown: an edit left open would be lost without a word.
    if (!edit.hidden && edit.edited()) {
      say(ctx, 'You have changed the arguments: press “Run with these arguments” to run ' +
        'with your changes, or close Edit to approve them as shown.');
      return;
    }
    var body = { decision: 'approve' };
    // "The same again": a standing grant for these arguments, this actor, for a while.
    if (again.checked) body.grant = { expires_in: 3600, for_actor: true };
    ctx.decide(body);
  });
  if (takes('approve')) {
    buttons.appendChild(approve);
    // An answer link speaks for this one question: granting the same again takes signing in.
    if (!byLink) buttons.appendChild(againLabel);
  }
  [
    ['Edit', 'edit', edit],
    ['Reject', 'reject', rejectPanel(ctx)],
    ['Answer instead', 'respond', answerPanel(ctx)]
  ].filter(function (item) {
    if (!takes(item[1])) return false;
    return !voting || item[1] !== 'respond';  // a quorum takes votes, not answers
  }).map(function (item) {
    return [item[0], item[2]];
  }).forEach(function (pair) {
    var panel = pair[1];
    panel.hidden = true;
    panels.appendChild(panel);
    var button = el('button', { text: pair[0] + '…', attrs: { type: 'button', 'aria-expanded': 'false' } });
    button.addEventListener('click', function () {
      var opening = panel.hidden;
      Array.prototype.forEach.call(panels.children, function (other) { other.hidden = true; });
      buttons.querySelectorAll('[aria-expanded]').forEach(function (other) { other.setAttribute('aria-expanded', 'false'); });
      panel.hidden = !opening;
      button.setAttribute('aria-expanded', String(opening));
    });
    buttons.appendChild(button);
  });
  ctx.card.appendChild(buttons);
  ctx.card.appendChild(panels);
}

function say(ctx, message) {
  ctx.error.textContent = shownText(message);
  ctx.error.hidden = false;
}

// On submit, sends the decision `decision()` makes; a string it returns is what to fix.
function onSubmit(ctx, panel, decision) {
  panel.addEventListener('submit', function (event) {
    event.preventDefault();
    var made = decision();
    if (typeof made === 'string') say(ctx, made);
    else ctx.decide(made);
  });
}

function editPanel(ctx, args, schema) {
  // The page's own check says what is wrong in words, instead of the browser's bubbles.
  var panel = el('form', { className: 'answer edit-panel', attrs: { 'aria-label': 'Edit the arguments', novalidate: '' } });
  var body = el('div', { className: 'edit-body' });
  var toggle = el('button', { className: 'secondary', attrs: { type: 'button' } });
  var send = el('button', { className: 'primary', text: 'Run with these arguments', attrs: { type: 'submit' } });
  var canDraw = drawable(schema, true);
  var current = null;

  function showForm(value) {
    current = { mode: 'form', form: buildForm(schema, value) };
    body.replaceChildren(current.form.node);
    toggle.textContent = 'Edit as JSON';
  }

  function showJson(value) {
    var area = el('textarea', { className: 'json-editor', attrs: { rows: '8', spellcheck: 'false', 'aria-label': 'Arguments as JSON' } });
    // What steers the reading is written as a `\u` escape, which JSON reads back as it was.
    area.value = escapedJson(stringify(value, 2));
    current = { mode: 'json', area: area };
    var parts = [area];
    if (holdsSteering(value)) parts.unshift(el('p', { className: 'field-warning', text: JSON_WARNING }));
    if (!canDraw) parts.unshift(el('p', { className: 'quiet', text: 'This tool takes arguments the form cannot draw: edit them as JSON.' }));
    body.replaceChildren.apply(body, parts);
    toggle.textContent = 'Back to the form';
    toggle.hidden = !canDraw;
  }

  // What the editor holds: { value } or { problems }.
  function read() {
    if (current.mode === 'form') return current.form.read();
    var value;
    try {
      value = parseJson(current.area.value);
    } catch (err) {
      return { problems: ['the JSON does not parse: ' + err.message] };
    }
    return isObject(value) ? { value: value } : { problems: ['the arguments must be a JSON object'] };
  }

  toggle.addEventListener('click', function () {
    var got = read();
    if (got.problems) {
      say(ctx, 'Fix the edit first: ' + got.problems.join('; ') + '.');
      return;
    }
    ctx.error.hidden = true;
    if (current.mode === 'form') showJson(got.value);
    else showForm(got.value);
  });
  onSubmit(ctx, panel, function () {
    var got = read();
    var problems = got.problems || check(schema, got.value);
    if (problems.length) return 'Fix the edit first: ' + problems.join('; ') + '.';
    return { decision: 'edit', arguments: got.value };
  });
  // Whether the editor holds anything but the arguments as shown (a problem counts as a change).
  panel.edited = function () {
    var got = read();
    return Boolean(got.problems) || !same(got.value, args);
  };
  if (canDraw) showForm(args);
  else showJson(args);
  panel.appendChild(body);
  panel.appendChild(el('div', { className: 'row' }, [send, toggle]));
  return panel;
}

// Whether a key or a text anywhere in `value` holds what steers how it reads.
function holdsSteering(value) {
  if (typeof value === 'string') return steers(value);
  if (Array.isArray(value)) return value.some(holdsSteering);
  if (!isObject(value)) return false;
  return Object.keys(value).some(function (key) { return steers(key) || holdsSteering(value[key]); });
}

function rejectPanel(ctx) {
  var panel = el('form', { className: 'row reject-panel' });
  var reason = el('input', {
    attrs: { type: 'text', maxlength: '1000', placeholder: 'Why not (the agent reads it)', 'aria-label': 'Why you reject it' }
  });
  panel.appendChild(reason);
  panel.appendChild(el('button', { className: 'danger', text: 'Reject', attrs: { type: 'submit' } }));
  onSubmit(ctx, panel, function () {
    if (!reason.value.trim()) return 'Say why you reject it: the agent reads the reason.';
    return { decision: 'reject', reason: reason.value.trim() };
  });
  return panel;
}

function answerPanel(ctx) {
  var panel = el('form', { className: 'answer answer-panel' });
  var area = el('textarea', {
    attrs: { rows: '3', maxlength: '100000', 'aria-label': 'Your answer instead', placeholder: 'The agent reads this as the tool’s result; the tool does not run' }
  });
  panel.appendChild(area);
  panel.appendChild(el('button', { className: 'primary', text: 'Send instead of running', attrs: { type: 'submit' } }));
  onSubmit(ctx, panel, function () {
    if (!area.value.trim()) return 'Write the answer first.';
    return { decision: 'respond', result: area.value };
  });
  return panel;
}

// -- history ---------------------------------------------------------------------------------

function entryLine(entry, schema) {
  var parts = [text(entry.type)];
  if (entry.decision) parts.push(text(entry.decision));
  if (entry.status) parts.push(text(entry.status));
  if (entry.outcome) parts.push('→ ' + text(entry.outcome));
  if (entry.actor) parts.push('by ' + text(entry.actor));
  if (entry.surface) parts.push('via ' + text(entry.surface));
  if (entry.reason) parts.push('“' + text(entry.reason) + '”');
  if (isObject(entry.arguments)) parts.push(argumentsLine(entry.arguments, schema));
  if (typeof entry.result === 'string') parts.push('“' + entry.result + '”');
  if (Array.isArray(entry.approvers)) parts.push('approvers: ' + entry.approvers.map(text).join(', '));
  if (entry.type === 'executed') parts.push(entry.ran ? 'ran' : 'did not run');
  if (entry.type === 'policy_decided') parts.push(entry.enforced === false ? 'shadow, not acted on' : 'automatic');
  // The framework that asked refused the outcome handed to it (a workflow that had ended).
  if (entry.type === 'delivered' && (entry.accepted === false || entry.refused)) {
    parts.push(entry.refused ? 'refused: ' + text(entry.refused) : 'refused');
  }
  if (typeof entry.digest === 'string') parts.push('digest ' + entry.digest.slice(0, DIGEST_SHOWN));
  return parts.join(' · ');
}

function drawHistory(list, entries, schema) {
  list.replaceChildren();
  entries.filter(isObject).forEach(function (entry) {
    list.appendChild(el('li', { attrs: { 'data-type': text(entry.type) } }, [
      el('time', { text: when(entry.at) }),
      el('span', { text: ' ' + entryLine(entry, schema) })
    ]));
  });
}

// -- outcome ---------------------------------------------------------------------------------

// How an approval ended, for the settled list: { outcome, how, answer } or null.
export function approvalOutcome(view, by) {
  if (view.status === 'rejected' && !view.withdrawn) {
    var reason = view.reason ? ': ' + text(view.reason) : '';
    return { outcome: 'rejected', how: 'Rejected by ' + by + reason };
  }
  if (view.status !== 'resolved') return null;
  var decision;
  try {
    decision = parseJson(view.result);
  } catch (err) {
    return null;
  }
  if (!isObject(decision)) return null;
  if (decision.decision === 'approve') return { outcome: 'approved', how: 'Approved by ' + by };
  if (decision.decision === 'edit') {
    return { outcome: 'edited', how: 'Approved with changes by ' + by, answer: argumentsLine(decision.arguments, isObject(view.answer_schema) ? view.answer_schema : {}) };
  }
  if (decision.decision === 'respond') {
    return { outcome: 'answered', how: 'Answered instead by ' + by, answer: text(decision.result) };
  }
  return null;
}
