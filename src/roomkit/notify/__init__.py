"""Reach people where they are: notification surfaces and what they are handed."""

from roomkit.notify.surface import DeliveryError, Directory, Notice, NoticeType, Person, Surface

__all__ = ["DeliveryError", "Directory", "Notice", "NoticeType", "Person", "Surface"]
