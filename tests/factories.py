"""factory_boy factories for the labeling models: the one place tests build rows."""

from __future__ import annotations

from typing import Any

import factory
from django.contrib.auth.models import Group, User

from labeling import models
from labeling.selectors import candidate_token

GRADES = [
    {
        "grade": g,
        "label": label,
        "meaning": f"{label}: what a grade {g} document does for the query",
        "positive_examples": [f"grade {g} example {i}" for i in range(1, 4)],
        "negative_examples": [f"not grade {g} example {i}" for i in range(1, 4)],
    }
    for g, label in [(3, "Exact answer"), (2, "Useful"), (1, "Tangential"), (0, "Irrelevant")]
]


class UserFactory(factory.django.DjangoModelFactory[User]):
    class Meta:
        model = User
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    password = factory.django.Password("correct horse battery staple")

    @factory.post_generation
    def groups(self, create: bool, extracted: Any, **kwargs: Any) -> None:
        for name in extracted or ():
            self.groups.add(Group.objects.get_or_create(name=name)[0])


class RubricFactory(factory.django.DjangoModelFactory[models.Rubric]):
    class Meta:
        model = models.Rubric
        django_get_or_create = ("name", "version")

    name = "help-center"
    version = 1
    scale_min = 0
    scale_max = 3
    grades = factory.LazyFunction(lambda: [dict(g) for g in GRADES])


class GoldenSetFactory(factory.django.DjangoModelFactory[models.GoldenSet]):
    class Meta:
        model = models.GoldenSet
        skip_postgeneration_save = True

    slug = factory.Sequence(lambda n: f"set-{n}")
    name = factory.LazyAttribute(lambda s: s.slug.replace("-", " ").title())
    surface = "help-center"
    locales = factory.LazyFunction(lambda: ["en-US", "de-DE"])
    rubric = factory.SubFactory(RubricFactory)
    dual_rate = 0.0

    @factory.post_generation
    def raters(self, create: bool, extracted: Any, **kwargs: Any) -> None:
        if extracted:
            self.raters.add(*extracted)

    @factory.post_generation
    def reviewers(self, create: bool, extracted: Any, **kwargs: Any) -> None:
        if extracted:
            self.reviewers.add(*extracted)


class DocumentFactory(factory.django.DjangoModelFactory[models.Document]):
    class Meta:
        model = models.Document

    golden_set = factory.SubFactory(GoldenSetFactory)
    doc_id = factory.Sequence(lambda n: f"doc-{1000 + n}")
    key = factory.LazyAttribute(lambda d: f"https://help.example.com/{d.doc_id}")
    title = factory.Sequence(lambda n: f"Help article {n}")
    url = factory.LazyAttribute(lambda d: d.key)
    snippet = "A short summary of the article."
    body = "The article's text."
    fields = factory.LazyFunction(lambda: {"product": "billing", "status": "published", "locale": "en-US"})


class QueryFactory(factory.django.DjangoModelFactory[models.Query]):
    class Meta:
        model = models.Query

    golden_set = factory.SubFactory(GoldenSetFactory)
    external_id = factory.Sequence(lambda n: f"q-{n:04d}")
    text = factory.Sequence(lambda n: f"how do I do thing {n}")
    locale = "en-US"
    filters = factory.LazyFunction(lambda: {"product": "billing"})


class CandidateFactory(factory.django.DjangoModelFactory[models.Candidate]):
    class Meta:
        model = models.Candidate

    query = factory.SubFactory(QueryFactory)
    document = factory.SubFactory(DocumentFactory, golden_set=factory.SelfAttribute("..query.golden_set"))
    provenance = factory.LazyFunction(lambda: [{"system": "bm25", "rank": 1}])
    best_rank = 1


class FrozenLabelFactory(factory.django.DjangoModelFactory[models.FrozenLabel]):
    class Meta:
        model = models.FrozenLabel

    query = factory.SubFactory(QueryFactory)
    document = factory.SubFactory(DocumentFactory, golden_set=factory.SelfAttribute("..query.golden_set"))
    grade = 3
    version = "2026-08-01"


class AssignmentFactory(factory.django.DjangoModelFactory[models.Assignment]):
    class Meta:
        model = models.Assignment
        skip_postgeneration_save = True

    query = factory.SubFactory(QueryFactory)
    rater = factory.SubFactory(UserFactory, groups=["raters"])
    kind = models.Assignment.Kind.PRIMARY

    @factory.post_generation
    def on_the_list(assignment: models.Assignment, create: bool, extracted: Any, **kwargs: Any) -> None:
        """The rater is put on the set's raters list, as the app does before assigning (the rule of
        labeling.roles: a rater opens only the sets whose list holds them); `on_the_list=False` leaves
        the list alone."""
        if create and extracted is not False:
            assignment.query.golden_set.raters.add(assignment.rater)


class JudgmentFactory(factory.django.DjangoModelFactory[models.Judgment]):
    class Meta:
        model = models.Judgment

    assignment = factory.SubFactory(AssignmentFactory)
    document = factory.SubFactory(
        DocumentFactory, golden_set=factory.SelfAttribute("..assignment.query.golden_set")
    )
    grade = 2


def pooled_query(golden_set: models.GoldenSet, n: int, **query_fields: Any) -> models.Query:
    """A query of the set with a pool of n candidates (documents made for it), ranks 1..n from system bm25."""
    query = QueryFactory.create(golden_set=golden_set, **query_fields)
    for rank in range(1, n + 1):
        doc = DocumentFactory.create(golden_set=golden_set)
        CandidateFactory.create(
            query=query, document=doc, provenance=[{"system": "bm25", "rank": rank}], best_rank=rank
        )
    return query


class AdjudicationFactory(factory.django.DjangoModelFactory[models.Adjudication]):
    class Meta:
        model = models.Adjudication

    query = factory.SubFactory(QueryFactory)
    document = factory.SubFactory(DocumentFactory, golden_set=factory.SelfAttribute("..query.golden_set"))
    reviewer = factory.SubFactory(UserFactory, groups=["reviewers"])
    grade = 2
    rationale = "the rubric's grade 2 fits"


def grade(
    assignment: models.Assignment, document: models.Document, value: int, **fields: Any
) -> models.Judgment:
    """A judgment written directly (no service, so no completion or dispute check runs)."""
    return JudgmentFactory.create(assignment=assignment, document=document, grade=value, **fields)


def token(assignment: models.Assignment, candidate: models.Candidate | int) -> str:
    """What the grading page and its endpoints call `candidate` in `assignment` (never its id)."""
    pk = candidate if isinstance(candidate, int) else candidate.pk
    return candidate_token(assignment_id=assignment.pk, candidate_id=pk)


def tokens(assignment: models.Assignment) -> dict[str, models.Candidate]:
    """The assignment's pool by token: a page's or a reply's token back to its candidate."""
    return {token(assignment, c): c for c in assignment.query.candidates.all()}


def grant_secrets(golden_set: models.GoldenSet, *variables: str) -> None:
    """An administrator's grants of these secret variables to the set (labeling.selectors.secrets)."""
    for variable in variables:
        models.SecretGrant.objects.get_or_create(golden_set=golden_set, variable=variable)
