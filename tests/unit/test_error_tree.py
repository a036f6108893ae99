"""One exception hierarchy (``errors.py``): every error the package defines there is a
``CareerWiseError`` and is drawn in the module's tree, including the deep flows' and LINE's."""

from __future__ import annotations

import careerwise.errors as errors
from careerwise.channels.line import ASSISTANT_UNAVAILABLE
from careerwise.channels.line import LineAssistantUnavailableError as LineChannelAssistantError
from careerwise.channels.line import LinePushError as LineChannelPushError
from careerwise.errors import CareerWiseError, LinePushError, StepFailed


def test_every_error_is_in_the_tree_and_drawn_in_it() -> None:
    classes = [v for v in vars(errors).values() if isinstance(v, type) and issubclass(v, BaseException)]
    assert StepFailed in classes and LinePushError in classes
    for cls in classes:
        assert issubclass(cls, CareerWiseError), cls
        assert cls.__name__ in (errors.__doc__ or ""), cls


def test_step_failed_keeps_its_code_detail_and_reach() -> None:
    failure = StepFailed("timeout", "the agent took 31 s", unreachable=True)
    assert (failure.code, failure.detail, failure.unreachable) == ("timeout", "the agent took 31 s", True)
    assert str(failure) == "timeout: the agent took 31 s"
    assert str(StepFailed("empty")) == "empty" and not StepFailed("empty").unreachable


def test_the_line_channel_raises_the_trees_push_error() -> None:
    assert LineChannelPushError is LinePushError
    assert LinePushError("push refused").code == "line_push_failed"


def test_the_line_channel_raises_the_trees_assistant_error_and_counts_its_code() -> None:
    # defined in errors.py (so the tree test above checks it is drawn there), not beside the channel
    assert getattr(errors, "LineAssistantUnavailableError", None) is LineChannelAssistantError
    error = LineChannelAssistantError("the LINE assistant 'nobody' does not exist")
    assert isinstance(error, CareerWiseError)
    # the channel counts it in careerwise_errors_total under the tree's code, as the engine does its errors
    assert error.code == ASSISTANT_UNAVAILABLE == "line_assistant_unavailable"
