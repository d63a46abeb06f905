#!/usr/bin/env node
// Diff pairs of CloudFormation templates with the CDK's own diff engine
// (@aws-cdk/cloudformation-diff, the engine behind `cdk diff`) and print the change sets as
// a JSON array on stdout, one per pair, in order. Used by mlcc_constructs/ops/diff_guard.py;
// a whole stack history is diffed by one node process (the engine takes ~0.4 s to load).
//
//   node _cfn_diff.js BEFORE.template.json AFTER.template.json [BEFORE2 AFTER2 ...]
//
// The engine is resolved from NODE_PATH or the working directory's node_modules.
'use strict';

process.env.FORCE_COLOR = '0'; // plain text from the formatter (chalk reads this)

const fs = require('fs');
const path = require('path');
const { Writable } = require('stream');

function loadEngine() {
  const bases = [process.cwd(), path.resolve(__dirname, '..')];
  for (const base of bases) {
    try {
      return require(require.resolve('@aws-cdk/cloudformation-diff', { paths: [base] }));
    } catch (error) {
      if (error.code !== 'MODULE_NOT_FOUND') throw error;
    }
  }
  return require('@aws-cdk/cloudformation-diff'); // NODE_PATH, or a clear MODULE_NOT_FOUND
}

function readTemplate(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

function changeKind(diff) {
  if (diff.isAddition) return 'added';
  if (diff.isRemoval) return 'removed';
  return 'modified';
}

function main(argv) {
  if (argv.length === 0 || argv.length % 2 !== 0) {
    process.stderr.write('usage: _cfn_diff.js BEFORE.template.json AFTER.template.json [...]\n');
    return 2;
  }
  const engine = loadEngine();
  const results = [];
  for (let i = 0; i < argv.length; i += 2) {
    results.push(changeSet(engine, readTemplate(argv[i]), readTemplate(argv[i + 1])));
  }
  process.stdout.write(JSON.stringify(results, null, 1) + '\n');
  return 0;
}

function changeSet(engine, before, after) {
  const diff = engine.fullDiff(before, after);

  const resources = [];
  diff.resources.forEachDifference((logicalId, change) => {
    const properties = {};
    for (const [name, property] of Object.entries(change.propertyUpdates)) {
      properties[name] = {
        impact: property.changeImpact,
        old: property.oldValue === undefined ? null : property.oldValue,
        new: property.newValue === undefined ? null : property.newValue,
      };
    }
    resources.push({
      logicalId,
      type: change.resourceType || change.newResourceType || change.oldResourceType,
      change: changeKind(change),
      impact: change.changeImpact,
      typeChanged: change.resourceTypeChanged,
      properties,
      other: Object.keys(change.otherChanges).sort(),
    });
  });

  const sections = [];
  for (const section of ['conditions', 'mappings', 'metadata', 'outputs', 'parameters', 'unknown']) {
    diff[section].forEachDifference((id, change) => {
      sections.push({
        section,
        id,
        change: change.isAddition ? 'added' : change.isRemoval ? 'removed' : 'modified',
      });
    });
  }
  for (const section of ['awsTemplateFormatVersion', 'description', 'transform']) {
    if (diff[section] && diff[section].isDifferent) {
      sections.push({ section, id: section, change: 'modified' });
    }
  }

  let text = '';
  const sink = new Writable({
    write(chunk, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  sink.columns = 120;
  engine.formatDifferences(sink, diff);

  resources.sort((a, b) => (a.logicalId < b.logicalId ? -1 : a.logicalId > b.logicalId ? 1 : 0));
  return { resources, sections, text };
}

process.exitCode = main(process.argv.slice(2));
