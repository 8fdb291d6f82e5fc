"""The spelling stage: the misspellings and elongations of the query's words that the namespace itself holds
("alergic", "reeading", "soooo" for "allergic", "reading", "so") join the words keyword search matches. A chat
misspells a word now and then; a query spelt right would miss those messages, and one misspelt would miss the rest.

The variants come from the namespace's own vocabulary (its profile, see the structure stage), never another's: one
edit from a query word (an insertion, a deletion, a change, two letters swapped) or the same once elongations
collapse, and rarer in the namespace than the word, so that a word of its own ("glass" next to "class") said as
often is not taken for a slip.
"""

from __future__ import annotations

from rearview.chat_text import known_word
from rearview.service.recall.state import Collaborators, RecallState
from rearview.stemming import index_terms
from rearview.text_analysis import query_terms

# Variants kept per query word at most, commonest first: a word has one or two usual misspellings.
_PER_TERM = 3


def spelling(ctx: Collaborators, run: RecallState) -> None:
    """With `typo_min_length` above 0 and query terms: each term's variants in the namespace's vocabulary, for
    keyword search (`run.variants`)."""
    tuning = ctx.tuning
    if (tuning.typo_min_length <= 0 and tuning.keyword_common_share <= 0) or not run.terms:
        return
    with run.stage("spelling") as st:
        profile = ctx.profiles.get(ctx.store, ctx.index, run.namespace, tuning.structure_sample)
        found: dict[str, list[str]] = {}
        for term in run.terms if tuning.typo_min_length > 0 else []:
            stem = index_terms(term)
            variants = [
                word
                for word in profile.vocabulary.variants(term, tuning.typo_min_length, tuning.typo_max_share)
                # A variant that stems like the term is matched already ("reads" for "reading"); one that is an
                # English word is a word of its own ("games" for "james"), not a slip.
                if index_terms(word) != stem and not known_word(word)
            ]
            if variants:
                found[term] = variants[:_PER_TERM]
        run.variants = found
        share = tuning.keyword_common_share
        sampled = max(profile.vocabulary.texts, 1)
        if share > 0 and profile.vocabulary.texts >= tuning.common_entity_min_episodes:
            common = [t for t in run.terms if profile.vocabulary.counts.get(t, 0) / sampled >= share]
            run.common_terms = common if len(common) < len(run.terms) else []
        st.detail = {"vocabulary": len(profile.vocabulary), "variants": found, "common_terms": run.common_terms}


def keyword_text(run: RecallState) -> str:
    """The text keyword search matches: the query's (less the terms too common in the namespace) and the variants
    of its terms that the spelling stage found."""
    text = run.text
    if run.common_terms:
        common = set(run.common_terms)
        text = " ".join(t for t in query_terms(text) if t not in common) or text
    extra = [word for words in run.variants.values() for word in words]
    return " ".join([text, *extra]) if extra else text
