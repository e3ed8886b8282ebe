"""How a tool's name is read: when jit looks for the sibling that hands out what a parameter needs
(:func:`jit.selection.producers.producers`) a verb is matched at a word's boundary, a shared prefix that
is itself a verb is no server prefix, and a parameter's name is text, not a pattern; and when a step
is fitted to a name (:func:`jit.selection.step_words.name_fit`) only an ``API-`` operation's prefix
is left out."""

from __future__ import annotations

from tests.test_task_steps import _lines, _tool

from jit.selection.step_words import name_fit
from jit.selection.producers import producers
from jit.selection.steps import Step


def test_a_shared_prefix_that_is_a_verb_hides_no_producers_verb():
    # create_card needs a list; create_list makes one, it hands out none that exists
    card = _tool(1, "board", "create_card", "Create a card", ("list_id",))
    assert producers(card, _lines([(2, _tool(2, "board", "create_list", "Create a list of cards"))])) == []
    gone = _tool(3, "org", "remove_user", "Remove a user", ("user_id",))
    assert producers(gone, _lines([(4, _tool(4, "org", "remove_list_of_users", "Remove users"))])) == []
    # a prefix that is no verb still is one
    logs = _tool(5, "cluster", "kubectl_logs", "Logs of a pod", ("pod_id",))
    assert producers(logs, _lines([(6, _tool(6, "cluster", "kubectl_list_pods", "List pods"))])) == [6]


def test_a_verb_counts_only_at_a_word_boundary_of_the_name():
    def named(i: int, name: str) -> object:
        st = _tool(i, "news", name, "Articles of a source", ("name",))
        st.tool.input_schema["properties"]["name"]["description"] = "Name of the source"
        return st
    sources = _lines([(9, _tool(9, "news", "list_sources", "List the news sources"))])
    # get_news and address_lookup make nothing: "new" and "add" inside a word are no verbs
    assert producers(named(1, "get_news"), sources) == [9]
    assert producers(named(2, "address_lookup"), sources) == [9]
    assert producers(named(3, "getNewsArticles"), sources) == [9]
    assert producers(named(4, "add_source"), sources) == []  # the name is the new source's
    assert producers(named(5, "addSource"), sources) == []
    # nor are the verbs inside deregister, renew or readd (a camelCase verb starts with a capital)
    for i, name in enumerate(("deregister_source", "renew_source", "readd_source", "preinit_source"), start=10):
        assert producers(named(i, name), sources) == [9], name
    # "listen" lists nothing
    talk = _tool(6, "chat", "post_message", "Post a message", ("channel_id",))
    assert producers(talk, _lines([(7, _tool(7, "chat", "listen_channels", "Stream channel events"))])) == []


def test_a_parameter_name_with_pattern_characters_is_read_as_text():
    odd = _tool(1, "s", "get_thing", "A thing", ("(foo[bar_id",))
    assert producers(odd, _lines([(2, _tool(2, "s", "list_things", "List things"))])) == []


def test_only_an_api_operations_prefix_is_no_word_of_the_name():
    call = Step("call the REST API", "/read")
    assert name_fit("api_request", "http", call) > 0  # "api" is what it calls
    assert name_fit("API-post-search", "wiki", Step("search the wiki", "/read")) == 1.0
    assert name_fit("API_post_search", "wiki", Step("search the wiki", "/read")) == 1.0  # a method after it
