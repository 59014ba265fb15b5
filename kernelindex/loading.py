"""Rows become model instances without ``Model.__init__``.

Django builds every object a query returns by calling the model with one positional value per
column: ``__init__`` sends ``pre_init`` and ``post_init``, walks every concrete field and calls
``setattr`` per value. A list of 50 runs with their seven joined rows builds about 450
objects, and that walk was a fifth of an API page. ``LoadedQuickly.from_db`` makes the same
instance directly: the loaded columns go into ``__dict__`` (what ``setattr`` does for a new
instance: fields are non-data descriptors, a foreign key's ``*_id`` descriptor only clears a
cache a new instance does not have), deferred ones are left out, and ``_state`` says which
database the row came from. Anyone listening to ``pre_init``/``post_init`` for the model gets
Django's own path. tests/kernelindex/test_loading.py compares both paths field by field.
"""

from __future__ import annotations

from typing import Any

from django.db.models import signals
from django.db.models.base import ModelState


class LoadedQuickly:
    """Mix into a model (before ``models.Model``) to load its rows without ``__init__``."""

    _loaded_names: dict[tuple[str, ...], tuple[str, ...]]

    @classmethod
    def from_db(cls, db: str, field_names: Any, values: Any) -> Any:
        # The lists first: has_listeners() for each of ~450 objects a page was a third of this.
        if (signals.pre_init.receivers or signals.post_init.receivers) and (
            signals.pre_init.has_listeners(cls) or signals.post_init.has_listeners(cls)
        ):
            return super().from_db(db, field_names, values)  # type: ignore[misc]
        fields = cls._meta.concrete_fields  # type: ignore[attr-defined]
        names_of = cls.__dict__.get("_loaded_names")
        if names_of is None:
            names_of = {}
            cls._loaded_names = names_of
        key = tuple(field_names)
        names = names_of.get(key)
        if names is None:
            if len(values) == len(fields):
                names = tuple(field.attname for field in fields)
            else:  # as Model.from_db: the values of the loaded fields, in the fields' order
                names = tuple(field.attname for field in fields if field.attname in field_names)
            names_of[key] = names
        new = cls.__new__(cls)
        state = ModelState()
        state.adding = False
        state.db = db
        attributes = new.__dict__
        attributes["_state"] = state
        attributes.update(zip(names, values, strict=True))
        return new
