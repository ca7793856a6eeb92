"""JSONPath and Lambda function names as Step Functions accepts them (issue 24, item 5).

Expected outputs come from AWS's own documents, named at each test:
- AWS developer guide, "Using JSONPath paths" (amazon-states-language-paths): the input
  {"foo": 123, "bar": [...], "car": {...}, "jar": [{"a": 1}, {"a": 5}, {"a": 2}, {"a": 7}, {"a": 3}]}
  and `$.jar[?(@.a >= 5)] => [{"a": 5}, {"a": 7}]`; bracket notation `$.abc.['def ghi']`.
- aws-samples/serverless-account-signup-service, README.md "Advanced JSON Path": its sample
  payload and `"InputPath": "$..interests[?(@.category==home)]"`, which "filters all `home`
  insurance related interests" (the two interests whose category is "home"): an unquoted
  word in a filter is the string of that word.
- Lambda API Reference, Invoke, "FunctionName": name, name:alias, partial ARN, full ARN,
  "You can append a version number or alias to any of the formats".
"""

from __future__ import annotations

import textwrap

import pytest

from runtime.asl import paths
from runtime.asl.errors import AslError
from runtime.asl.machine import Machine
from runtime.asl.wrapper import lambda_name, parse_function_name
from unumctl_testing.apps import make_sfn_app
from unumctl.asl import AslValidationError, compile_definition, resolver, validate
from unumctl.local import LocalRunner
from unumctl.pipeline import load as load_app

# AWS developer guide, "Using JSONPath paths" (Reference Paths example input)
DOC_INPUT = {"foo": 123, "bar": ["a", "b", "c"], "car": {"cdr": True},
             "jar": [{"a": 1}, {"a": 5}, {"a": 2}, {"a": 7}, {"a": 3}]}

# aws-samples/serverless-account-signup-service README.md, "Here is a sample payload"
SIGNUP = {"data": {"firstname": "Jane", "lastname": "Doe",
                   "interests": [
                       {"category": "home", "type": "own", "yearBuilt": 2004},
                       {"category": "auto", "type": "car", "yearBuilt": 2012},
                       {"category": "boat", "type": "snowmobile", "yearBuilt": 2020},
                       {"category": "auto", "type": "motorcycle", "yearBuilt": 2018},
                       {"category": "auto", "type": "RV", "yearBuilt": 2015},
                       {"category": "home", "type": "business", "yearBuilt": 2009}]}}
HOMES = [SIGNUP["data"]["interests"][0], SIGNUP["data"]["interests"][5]]

PETS = {"pets": [{"species": "dog", "age": 1}, {"species": "cat", "age": 2},
                 {"species": "dog", "age": 7}, {"species": "cat", "age": 9},
                 {"species": "dog", "age": 3}]}


def run_pass(parameters: dict, value, input_path: str = "$"):
    """Output of a one-Pass-state machine with `parameters` on `value` (the interpreter)."""
    definition = {"StartAt": "P", "States": {"P": {"Type": "Pass", "InputPath": input_path,
                                                   "Parameters": parameters, "End": True}}}
    validate(definition, "sm.json")
    m = Machine(definition, {"Id": "x", "Name": "x", "StartTime": "x", "Input": value},
                clock=lambda: 0.0, sleep=lambda s: None, start_time=0.0)
    return m.run_inline("", "P", value, lambda ref, event: None)


def test_documented_filter_example_still_holds():
    # AWS developer guide: $.jar[?(@.a >= 5)] => [{"a": 5}, {"a": 7}]
    assert paths.read("$.jar[?(@.a >= 5)]", DOC_INPUT) == [{"a": 5}, {"a": 7}]


def test_unquoted_word_is_a_string_as_in_the_aws_sample():
    # aws-samples/serverless-account-signup-service: InputPath $..interests[?(@.category==home)]
    assert run_pass({"homes.$": "$"}, SIGNUP, input_path="$..interests[?(@.category==home)]") == \
        {"homes": HOMES}
    assert paths.read("$[?(@.Name==Receipt)]", [{"Name": "Receipt", "n": 1}, {"Name": "Invoice"}]) == \
        [{"Name": "Receipt", "n": 1}]
    # true / false / null / numbers stay JSON literals, not strings
    items = [{"v": True}, {"v": "true"}, {"v": None}, {"v": "null"}, {"v": 3}, {"v": "3"}]
    assert paths.read("$[?(@.v == true)]", items) == [{"v": True}]
    assert paths.read("$[?(@.v == null)]", items) == [{"v": None}]
    assert paths.read("$[?(@.v == 3)]", items) == [{"v": 3}]


def test_and_or_quoted_strings_and_parentheses():
    # the filter semantics of the documented `[?(@.a >= 5)]`, combined with && / ||
    young_dogs = run_pass({"young.$": "$.pets[?(@.species == 'dog' && @.age<5)]"}, PETS)
    assert young_dogs == {"young": [{"species": "dog", "age": 1}, {"species": "dog", "age": 3}]}
    assert paths.read('$.pets[?(@.species == "cat" || @.age >= 7)]', PETS) == \
        [{"species": "cat", "age": 2}, {"species": "dog", "age": 7}, {"species": "cat", "age": 9}]
    # && binds more tightly than || ; parentheses group
    assert paths.read("$.pets[?(@.age == 1 || @.species == cat && @.age > 5)]", PETS) == \
        [{"species": "dog", "age": 1}, {"species": "cat", "age": 9}]
    assert paths.read("$.pets[?((@.age == 1 || @.species == cat) && @.age < 5)]", PETS) == \
        [{"species": "dog", "age": 1}, {"species": "cat", "age": 2}]
    # an operator inside a quoted string is text, not an operator
    assert paths.read("$[?(@.s == 'a && b')]", [{"s": "a && b"}, {"s": "a"}]) == [{"s": "a && b"}]


def test_dot_before_a_bracket():
    assert paths.read("$.[?(@.a==1)]", [{"a": 1}, {"a": 2}]) == [{"a": 1}]
    assert paths.read("$.jar.[?(@.a >= 5)]", DOC_INPUT) == [{"a": 5}, {"a": 7}]
    # the developer guide's bracket-notation example $.abc.['def ghi']
    assert paths.read("$.abc.['def ghi']", {"abc": {"def ghi": 42}}) == 42
    assert paths.read("$..[?(@.a == 7)]", DOC_INPUT) == [{"a": 7}]


def test_aws_dialect_rewrites_only_outside_quotes():
    assert paths.aws_dialect("$.a[?(@.n == home && @.s != 'x == y')]") == \
        "$.a[?(@.n == 'home' && @.s != 'x == y')]"
    assert paths.aws_dialect("$['a.[b']") == "$['a.[b']"
    assert paths.aws_dialect("$.a == b") == "$.a == b"  # outside a filter: untouched


# what AWS's developer guide lists as unsupported ("Using JSONPath paths": functions such as
# length(), lexical operators such as subsetof, filtering by regular expression), and typos
@pytest.mark.parametrize("path,detail", [
    ("$.a[?(@.x =~ /ab.*/)]", "Parse error"),
    ("$.a.length()", "Parse error"),
    ("$.a[?(@.x.length() > 2)]", "Parse error"),
    ("$.a[?(@.x subsetof [1])]", "Parse error"),
    ("$.a[?(@.x in ['a', 'b'])]", "Parse error"),
    ("$.a[?(@.x == )]", "Parse error"),
    ("$.a[?(@.x == 'unterminated)]", "Invalid JSONPath"),
])
def test_still_refused_with_a_one_line_error(path, detail):
    definition = {"StartAt": "P", "States": {"P": {"Type": "Pass", "Parameters": {"v.$": path},
                                                   "End": True}}}
    with pytest.raises(AslValidationError) as e:
        validate(definition, "sm.json")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("sm.json: States.P.Parameters.v.$: "), msg
    assert detail in msg, msg


# ---------------------------------------------------------------- function names
FORMS = ["MyFn", "MyFn:$LATEST", "MyFn:prod", "MyFn:3",
         "123456789012:function:MyFn", "123456789012:function:MyFn:prod",
         "arn:aws:lambda:us-east-1:123456789012:function:MyFn",
         "arn:aws:lambda:us-east-1:123456789012:function:MyFn:$LATEST",
         "arn:aws:lambda:eu-west-1:123456789012:function:MyFn:live",
         "arn:aws-us-gov:lambda:us-gov-west-1:123456789012:function:MyFn:12"]


@pytest.mark.parametrize("ref", FORMS)
def test_every_function_name_form_names_the_function(ref):
    assert lambda_name(ref) == "MyFn"
    assert parse_function_name(ref)[0] == "MyFn"


# a Task's Resource is a Lambda ARN in the aws partition (other partitions and service
# integrations are the validator's Task checks, outside this change)
@pytest.mark.parametrize("how,ref", [("Resource", r) for r in FORMS if r.startswith("arn:aws:")]
                         + [("Parameters", r) for r in FORMS] + [("Arguments", r) for r in FORMS])
def test_qualified_names_compile_to_the_manifest_function(how, ref):
    if how == "Resource":
        st = {"Type": "Task", "Resource": ref, "End": True}
    elif how == "Parameters":
        st = {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
              "Parameters": {"FunctionName": ref, "Payload.$": "$"}, "End": True}
    else:
        st = {"Type": "Task", "QueryLanguage": "JSONata", "Resource": "arn:aws:states:::lambda:invoke",
              "Arguments": {"FunctionName": ref, "Payload": "{% $states.input %}"}, "End": True}
    compiled = compile_definition({"StartAt": "T", "States": {"T": st}},
                                  resolver({"my-fn": {}, "Other": {}}), ["Other", "my-fn"])
    assert sorted(compiled.code.values()) == ["my-fn"]


@pytest.mark.parametrize("field,st", [
    ("Parameters.FunctionName", {"Resource": "arn:aws:states:::lambda:invoke",
                                 "Parameters": {"FunctionName": "MyFn:prod:extra"}}),
    ("Parameters.FunctionName", {"Resource": "arn:aws:states:::lambda:invoke",
                                 "Parameters": {"FunctionName": "MyFn:pr od"}}),
    ("Resource", {"Resource": "arn:aws:lambda:us-east-1:123456789012:function:MyFn:a:b"}),
    ("Arguments.FunctionName", {"QueryLanguage": "JSONata", "Resource": "arn:aws:states:::lambda:invoke",
                                "Arguments": {"FunctionName": "arn:aws:lambda:x:function"}}),
])
def test_malformed_function_names_are_one_line_errors(field, st):
    definition = {"StartAt": "T", "States": {"T": {"Type": "Task", "End": True, **st}}}
    with pytest.raises(AslValidationError) as e:
        validate(definition, "sm.json")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"sm.json: States.T.{field}: "), msg
    assert "is not a Lambda function name or ARN" in msg


def test_unknown_function_with_a_qualifier_names_the_function_not_the_qualifier():
    # a Task Resource (a lambda:invoke FunctionName outside the manifest is a function
    # outside the app, docs/stepfunctions.md "Task -> function")
    st = {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:Missing:prod", "End": True}
    with pytest.raises(AslValidationError, match="Lambda function 'Missing' is not one of"):
        compile_definition({"StartAt": "T", "States": {"T": st}}, resolver({"MyFn": {}}), ["MyFn"])


def test_qualified_names_and_aws_filters_run_on_local(tmp_path):
    """A machine using each new form runs end to end on the local target: static qualified
    names, a run-time FunctionName.$ with a qualifier, and `&&` / unquoted-word filters."""
    arn = "arn:aws:lambda:us-east-1:123456789012:function:"
    machine = {"StartAt": "Direct", "States": {
        "Direct": {"Type": "Task", "Resource": arn + "Double:$LATEST", "Next": "Invoke"},
        "Invoke": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                   "Parameters": {"FunctionName": "Double:prod", "Payload.$": "$"},
                   "ResultSelector": {"items.$": "$.Payload.items"}, "Next": "Dynamic"},
        "Dynamic": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                    "Parameters": {"FunctionName.$": "States.Format('{}:3', $.items[0].fn)",
                                   "Payload.$": "$"},
                    "ResultSelector": {"items.$": "$.Payload.items"}, "Next": "Filter"},
        "Filter": {"Type": "Pass", "Parameters": {
            "big.$": "$[?(@.kind == big && @.n > 10)]",
            "odd.$": "$.[?(@.kind == 'odd')]"}, "InputPath": "$.items", "End": True}}}
    double = textwrap.dedent("""\
        def handler(event, context):
            return {'items': [dict(i, n=i['n'] * 2) for i in event['items']]}
        """)
    root = make_sfn_app(tmp_path / "app", machine, {"Double": double})
    inp = {"items": [{"fn": "Double", "kind": "big", "n": 2}, {"fn": "x", "kind": "big", "n": 4},
                     {"fn": "x", "kind": "odd", "n": 1}]}
    app = load_app(root)
    with LocalRunner(app, state=tmp_path / "state", quiet=True) as r:
        item = r.run(inp, timeout=60)
    assert item["status"] == "SUCCEEDED", item
    # n doubled three times: 2 -> 16, 4 -> 32, 1 -> 8
    assert item["v"] == {"big": [{"fn": "Double", "kind": "big", "n": 16},
                                      {"fn": "x", "kind": "big", "n": 32}],
                              "odd": [{"fn": "x", "kind": "odd", "n": 8}]}


def test_unquoted_operand_runs_to_the_next_delimiter():
    # getmoto/moto#7825: a machine that runs on AWS with [?(@.Name==/eggs/cooked/like)]
    data = {"input": {"detail": {"Parameters": [{"Name": "/eggs/cooked/like", "Value": "poached"},
                                                {"Name": "/eggs/other", "Value": "fried"}]}}}
    assert paths.read("$.input.detail.Parameters[?(@.Name==/eggs/cooked/like)].Value", data) == \
        ["poached"]
    assert paths.read("$[?(@.v == a.b && @.w == 1)]", [{"v": "a.b", "w": 1}, {"v": "a", "w": 1}]) == \
        [{"v": "a.b", "w": 1}]


def test_bad_paths_are_states_runtime_at_run_time():
    with pytest.raises(AslError) as e:
        paths.read("$.a[?(@.x subsetof [1])]", {"a": []})
    assert e.value.error == "States.Runtime"
