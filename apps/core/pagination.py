from rest_framework.pagination import CursorPagination, LimitOffsetPagination


class LimitOffset(LimitOffsetPagination):
    default_limit = 50
    max_limit = 200


class TimelineCursor(CursorPagination):
    page_size = 50
    ordering = "-created_at"
