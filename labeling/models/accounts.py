"""Accounts made by single sign-on (docs/deployment.md, "Single sign-on").

Part of `labeling.models` (which imports every model, as Django requires).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class SsoIdentity(models.Model):
    """The identity provider's account (issuer and subject) behind an Assay user, made at its first sign-in.

    A sign-in finds its user by this pair only, never by a username or an email address the provider
    reports: a provider's account cannot take over a local account (a break-glass admin) of the same
    name, and a person renamed at the provider stays the same user. A user without a row is a local
    account, which sign-in never changes."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identity"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created = models.DateTimeField(auto_now_add=True)
    # What the last sign-in read (shown in the admin: why the user holds the roles they hold).
    groups = models.JSONField(
        default=list, blank=True, help_text="the groups claim's values at the last sign-in"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=("issuer", "subject"), name="sso_identity_issuer_subject_unique")
        ]
        verbose_name = "SSO identity"
        verbose_name_plural = "SSO identities"

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"
